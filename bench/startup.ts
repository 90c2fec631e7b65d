/**
 * `tsx bench/startup.ts` — the decision server's start-up time and resident memory, compiled
 * (`npm run start:decision`'s command, after `npm run build`) against the TypeScript under tsx, in
 * alternating runs on one machine (docs/production.md "Start-up and memory"). Each run: spawn one
 * decision process (SLUICE_DECISION_PROCESSES=1) against its own redis-server holding a published
 * policy, time until /readyz answers 200, read VmRSS then, send CHECKS /v1/check requests (20 in
 * flight) and read VmRSS again, then SIGTERM. For the `tsx` CLI form (`npm run decision`), the RSS
 * is that of both its processes (the CLI and the node it starts with the loader).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { Redis } from "ioredis";
import { compileFixture, FIXTURE_KEYS, writeFixturePolicy } from "../lib/decision/testing/fixture";
import { DECISION_NODE_FLAGS } from "../lib/decision/process-flags";
import { freePort } from "../lib/net/ports";
import { startOwnRedis } from "../lib/processes/redis-server";

const ROOT = path.resolve(import.meta.dirname, "..");
const RUNS = Number(process.env.RUNS ?? 5);
const CHECKS = Number(process.env.CHECKS ?? 5_000);
const TOKEN = "svc_startup_bench_0001";
const PREFIX = "startup:";

const VARIANTS: Record<string, { command: string; args: string[] }> = {
  compiled: { command: process.execPath, args: [...DECISION_NODE_FLAGS, "dist/server/decision-server.js"] },
  "node --import tsx": { command: process.execPath, args: [...DECISION_NODE_FLAGS, "--import", "tsx", "worker/decision-server.ts"] },
  "tsx CLI": { command: path.join(ROOT, "node_modules/.bin/tsx"), args: [...DECISION_NODE_FLAGS, "worker/decision-server.ts"] },
};

/** Resident memory of a process and its children, in MB. */
function rssMb(pid: number): number {
  const kb = (p: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, "utf8"))?.[1] ?? 0);
  const children = (p: number): number[] => {
    try {
      return readFileSync(`/proc/${p}/task/${p}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return [];
    }
  };
  const all = [pid];
  for (let i = 0; i < all.length; i++) all.push(...children(all[i]!));
  return all.reduce((sum, p) => sum + kb(p), 0) / 1024;
}

async function checks(url: string): Promise<void> {
  let sent = 0;
  const body = JSON.stringify({ key: FIXTURE_KEYS.acme, operation: "GET /v1/orders", ip: "203.0.113.7" });
  const worker = async () => {
    while (sent < CHECKS) {
      sent++;
      const res = await fetch(`${url}/v1/check`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body });
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: 20 }, worker));
}

async function once(name: string, redisUrl: string): Promise<{ readyMs: number; rssReady: number; rssAfter: number }> {
  const port = await freePort();
  const { command, args } = VARIANTS[name]!;
  const env = { ...process.env, REDIS_URL: redisUrl, SLUICE_REDIS_PREFIX: PREFIX, SLUICE_SERVICE_TOKENS: TOKEN, DECISION_PORT: String(port), DECISION_HOST: "127.0.0.1", SLUICE_GRPC_PORT: "0", SLUICE_DECISION_PROCESSES: "1", LOG_LEVEL: "warn" };
  const started = performance.now();
  const child: ChildProcess = spawn(command, args, { cwd: ROOT, env, stdio: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited ${child.exitCode}`);
    const ok = await fetch(`${url}/readyz`).then((r) => r.status === 200, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const readyMs = performance.now() - started;
  const rssReady = rssMb(child.pid!);
  await checks(url);
  const rssAfter = rssMb(child.pid!);
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
  return { readyMs, rssReady, rssAfter };
}

async function main(): Promise<void> {
  if (!existsSync(path.join(ROOT, "dist/server/decision-server.js"))) throw new Error("run `npm run build` first");
  const redis = await startOwnRedis();
  const client = new Redis(redis.url);
  process.env.SLUICE_REDIS_PREFIX = PREFIX;
  await writeFixturePolicy(client, compileFixture());
  client.disconnect();
  const results: Record<string, { readyMs: number; rssReady: number; rssAfter: number }[]> = {};
  try {
    for (let run = 0; run < RUNS; run++) {
      for (const name of Object.keys(VARIANTS)) (results[name] ??= []).push(await once(name, redis.url));
    }
  } finally {
    await redis.stop();
  }
  const fmt = (xs: number[]) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)} (median ${xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(0)})`;
  console.log(`| variant | to /readyz, ms | RSS at ready, MB | RSS after ${CHECKS} checks, MB |`);
  console.log("| --- | ---: | ---: | ---: |");
  for (const [name, rs] of Object.entries(results)) {
    console.log(`| ${name} | ${fmt(rs.map((r) => r.readyMs))} | ${fmt(rs.map((r) => r.rssReady))} | ${fmt(rs.map((r) => r.rssAfter))} |`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
