/**
 * A throwaway 3-master Redis Cluster for tests: `redis-server` and `redis-cli` from PATH, free
 * ports, no persistence, in a temporary directory that stop() removes. (A single throwaway server
 * is startOwnRedis in lib/processes/redis-server.ts.)
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { portIsFree } from "../lib/net/ports";
import { stopProcess } from "../lib/processes/own-server";
import { spawnRedisServer, waitForRedis } from "../lib/processes/redis-server";

const run = promisify(execFile);

/** A free port whose cluster bus port (port + 10000) is free too. */
async function freePortPair(exclude: number[] = []): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if (exclude.includes(port) || exclude.includes(port + 10_000)) continue;
    if ((await portIsFree(port)) && (await portIsFree(port + 10_000))) return port;
  }
  throw new Error("no free port pair found");
}

export interface RedisClusterHandle {
  ports: number[];
  /** For REDIS_CLUSTER_NODES: `127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3`. */
  nodes: string;
  stop(): Promise<void>;
}

/** Three masters, no replicas, all 16384 slots assigned; resolves once the cluster state is ok. */
export async function startRedisCluster(): Promise<RedisClusterHandle> {
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-cluster-"));
  const ports: number[] = [];
  for (let i = 0; i < 3; i++) ports.push(await freePortPair(ports.flatMap((p) => [p, p + 10_000])));
  const children = ports.map((port) => {
    const nodeDir = path.join(dir, String(port));
    mkdirSync(nodeDir, { recursive: true });
    return spawnRedisServer(port, nodeDir, [
      "--cluster-enabled", "yes",
      "--cluster-config-file", "nodes.conf",
      "--cluster-node-timeout", "2000",
    ]);
  });
  const stop = async () => {
    await Promise.all(children.map((c) => stopProcess(c)));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(ports.map((p) => waitForRedis(p)));
    await run("redis-cli", ["--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"]);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const states = await Promise.all(
        ports.map(async (p) => (await run("redis-cli", ["-p", String(p), "cluster", "info"])).stdout),
      );
      if (states.every((s) => s.includes("cluster_state:ok"))) break;
      if (Date.now() > deadline) throw new Error("cluster did not reach cluster_state:ok");
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { ports, nodes: ports.map((p) => `127.0.0.1:${p}`).join(","), stop };
}
