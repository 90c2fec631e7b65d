/**
 * Throwaway Redis servers for tests that must not touch the shared 6379 (SCRIPT FLUSH, a kill) and a
 * throwaway 3-master Redis Cluster: `redis-server` and `redis-cli` from PATH, free ports, no
 * persistence, in a temporary directory that stop() removes. Every process is killed by its pid.
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A free port whose cluster bus port (port + 10000) is free too. */
export async function freePort(exclude: number[] = []): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if (exclude.includes(port) || exclude.includes(port + 10_000)) continue;
    if ((await portFree(port)) && (await portFree(port + 10_000))) return port;
  }
  throw new Error("no free port pair found");
}

async function waitForPing(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { stdout } = await run("redis-cli", ["-p", String(port), "ping"]);
      if (stdout.trim() === "PONG") return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer PING`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface RedisServer {
  port: number;
  url: string;
  stop(): Promise<void>;
}

function startProcess(port: number, dir: string, extra: string[]): ChildProcess {
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...extra],
    { stdio: "ignore" },
  );
  child.on("error", () => undefined);
  return child;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
    setTimeout(() => {
      child.kill("SIGKILL");
      resolve();
    }, 3_000).unref();
  });
}

/** A standalone redis-server on a free port. */
export async function startRedisServer(): Promise<RedisServer> {
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-redis-"));
  const port = await freePort();
  const child = startProcess(port, dir, []);
  await waitForPing(port);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      await stopProcess(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
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
  for (let i = 0; i < 3; i++) ports.push(await freePort(ports.flatMap((p) => [p, p + 10_000])));
  const children = ports.map((port) => {
    const nodeDir = path.join(dir, String(port));
    mkdirSync(nodeDir, { recursive: true });
    return startProcess(port, nodeDir, [
      "--cluster-enabled", "yes",
      "--cluster-config-file", "nodes.conf",
      "--cluster-node-timeout", "2000",
    ]);
  });
  const stop = async () => {
    await Promise.all(children.map(stopProcess));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(ports.map((p) => waitForPing(p)));
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
