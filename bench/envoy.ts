/**
 * `npm run bench:envoy`: ShouldRateLimit for a domain of the policy's `rateLimitService` beside
 * Sluice's own rate limit service path, side by side in one run, on one decision server process
 * and one throwaway redis-server, over gRPC with bench/grpc-load.ts as the load generator in its
 * own process (BENCH_CONNECTIONS calls in flight, BENCH_SECONDS per row):
 *
 * - `sluice domain`: SLUICE_RLS_DOMAIN, one descriptor (api_key, remote_address, method, path) over
 *   100k API keys, a sliding window counter that never denies — `npm run bench`'s gRPC row;
 * - `envoy domain`: an imported config's shape, `generic_key: api` then a key-only
 *   `remote_address` rule, over 100k addresses: their fixed window (one ENVOY_COUNT script call);
 * - `envoy + swc`: the same rule with `algorithm: sliding_window_counter` (the DECIDE script).
 *
 * Per row: calls/s, p50/p99, server CPU µs per call (/proc utime+stime), Redis µs per call (INFO
 * commandstats usec), the load generator's CPU. Read the ratios: absolute numbers swing ±30%
 * between runs on a shared machine.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { Redis } from "ioredis";
import { compileFixture, writeFixturePolicy } from "../lib/decision/testing/fixture";
import { DECISION_NODE_FLAGS } from "../lib/decision/process-flags";
import { freePort } from "../lib/net/ports";
import { startOwnRedis } from "../lib/processes/redis-server";
import type { PolicyFileInput } from "../lib/policy/policy-file";
import { sha256Hex } from "../lib/redis/key-index";
import { keys } from "../lib/redis/keys";
import { cpuUs } from "./proc-cpu";

const ROOT = path.resolve(import.meta.dirname, "..");
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const KEY_COUNT = 100_000;
const TOKEN = "bench_service_token";
const PREFIX = "bench-envoy:";

const rule = (extra: Record<string, unknown> = {}) => [
  { key: "generic_key", value: "api", descriptors: [{ key: "remote_address", rate_limit: { unit: "minute", requests_per_unit: 1_000_000_000, ...extra } }] },
];

function policy(): PolicyFileInput {
  return {
    version: 1,
    defaults: { failureMode: "open" },
    operations: [{ name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] }],
    tiers: [{ name: "bench", limits: [{ operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 1_000_000_000, window: "1m" }] }],
    tenants: [{ slug: "bench", name: "Bench", tier: "bench" }],
    rateLimitService: {
      domains: [
        { domain: "bench_envoy", descriptors: rule() },
        { domain: "bench_envoy_swc", descriptors: rule({ algorithm: "sliding_window_counter" }) },
      ],
    },
  } as unknown as PolicyFileInput;
}

async function redisUsec(redis: Redis): Promise<number> {
  let total = 0;
  for (const m of (await redis.info("commandstats")).matchAll(/usec=(\d+)/g)) total += Number(m[1]);
  return total;
}

async function waitReady(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const ok = await fetch(url).then((r) => r.status === 200, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become ready`);
}

interface Row {
  label: string;
  callsPerSec: number;
  p50: number;
  p99: number;
  serverUs: number;
  redisUs: number;
  loadgenUs: number;
  errors: number;
  overLimit: number;
}

async function measure(label: string, server: ChildProcess, grpcAddress: string, redis: Redis, env: Record<string, string>, seconds = SECONDS): Promise<Row> {
  const loadgen = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/grpc-load.ts")], {
    cwd: ROOT,
    env: { ...process.env, RLS_ADDRESS: grpcAddress, TOKEN, SECONDS: String(seconds), CONCURRENCY: String(CONNECTIONS), KEY_COUNT: String(KEY_COUNT), ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  loadgen.stdout.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => loadgen.once("exit", resolve));
  while (!out.includes("start\n") && loadgen.exitCode === null) await new Promise((r) => setTimeout(r, 5));
  const cpuBefore = cpuUs(server.pid!);
  const usecBefore = await redisUsec(redis);
  if ((await exited) !== 0) throw new Error(`grpc-load exited ${loadgen.exitCode}`);
  const serverUs = cpuUs(server.pid!) - cpuBefore;
  const usec = (await redisUsec(redis)) - usecBefore;
  const r = JSON.parse(out.trim().split("\n").pop()!) as { calls: number; errors: number; overLimit: number; p50: number; p99: number; cpuUs: number; seconds: number };
  const per = (n: number) => (r.calls > 0 ? n / r.calls : 0);
  const row: Row = { label, callsPerSec: r.calls / r.seconds, p50: r.p50, p99: r.p99, serverUs: per(serverUs), redisUs: per(usec), loadgenUs: per(r.cpuUs), errors: r.errors, overLimit: r.overLimit };
  process.stdout.write(
    `  ${label.padEnd(16)} ${row.callsPerSec.toFixed(0).padStart(7)} calls/s  p50 ${row.p50} ms  p99 ${row.p99} ms  server ${row.serverUs.toFixed(1)} µs  redis ${row.redisUs.toFixed(1)} µs  loadgen ${row.loadgenUs.toFixed(0)} µs${row.errors ? `  errors ${row.errors}` : ""}${row.overLimit ? `  OVER_LIMIT ${row.overLimit}` : ""}\n`,
  );
  return row;
}

async function main(): Promise<void> {
  process.env.SLUICE_REDIS_PREFIX = PREFIX;
  const own = await startOwnRedis();
  const redis = new Redis(own.url);
  let server: ChildProcess | null = null;
  try {
    await writeFixturePolicy(redis, compileFixture(policy()), [sha256Hex(TOKEN)]);
    const benchKeys = Array.from({ length: KEY_COUNT }, (_, i) => `bk_${i.toString(36)}_bench`);
    for (let i = 0; i < benchKeys.length; i += 5_000) {
      await redis.hset(keys.keyIndex(), Object.fromEntries(benchKeys.slice(i, i + 5_000).map((k) => [sha256Hex(k), "bench"])));
    }
    const port = await freePort();
    const grpcPort = await freePort();
    server = spawn(process.execPath, [...DECISION_NODE_FLAGS, "--import", "tsx", path.join(ROOT, "worker/decision-server.ts")], {
      cwd: ROOT,
      env: {
        ...process.env,
        REDIS_URL: own.url,
        SLUICE_REDIS_PREFIX: PREFIX,
        SLUICE_SERVICE_TOKENS: TOKEN,
        // Lenient: the bench measures the Redis path, not the failure path.
        REDIS_TIMEOUT_MS: "2000",
        POLICY_POLL_MS: "5000",
        SLUICE_DECISION_PROCESSES: "1",
        SLUICE_GRPC_PORT: String(grpcPort),
        PORT: String(port),
        DECISION_PORT: String(port),
        DECISION_HOST: "127.0.0.1",
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "ignore", "inherit"],
    });
    const url = `http://127.0.0.1:${port}`;
    await waitReady(`${url}/readyz`);
    const grpcAddress = `127.0.0.1:${grpcPort}`;

    // Every API key through the key cache once, so the Sluice row pays no key-index misses (a server in steady state does not).
    for (let at = 0; at < KEY_COUNT; at += 800) {
      await Promise.all(
        Array.from({ length: 8 }, (_, c) => benchKeys.slice(at + c * 100, at + c * 100 + 100)).map((chunk) =>
          fetch(`${url}/v1/check`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ requests: chunk.map((key) => ({ key, operation: "GET /v1/orders/42" })) }) }).then((r) => r.arrayBuffer()),
        ),
      );
    }
    const sluiceEnv = { KEY_PATTERN: "bk_{i}_bench" };
    const envoyEnv = { KEY_PATTERN: "198.51.{d}", ENVOY_DOMAIN: "bench_envoy" };
    const swcEnv = { ...envoyEnv, ENVOY_DOMAIN: "bench_envoy_swc" };
    process.stdout.write(`warming up each path for 3 s\n`);
    for (const env of [sluiceEnv, envoyEnv, swcEnv]) await measure("warm-up", server, grpcAddress, redis, env, 3);

    process.stdout.write(`\nShouldRateLimit side by side — ${CONNECTIONS} calls in flight, ${SECONDS} s per row, one decision process, own redis-server\n`);
    const sluice = await measure("sluice domain", server, grpcAddress, redis, sluiceEnv);
    const envoy = await measure("envoy domain", server, grpcAddress, redis, envoyEnv);
    const swc = await measure("envoy + swc", server, grpcAddress, redis, swcEnv);
    const ratio = (a: number, b: number) => (b > 0 ? a / b : 0).toFixed(2);
    process.stdout.write(`\nratios (goal in brackets)\n`);
    process.stdout.write(`  envoy / sluice calls/s        ${ratio(envoy.callsPerSec, sluice.callsPerSec)}  [≥ 1.00]\n`);
    process.stdout.write(`  envoy / sluice server µs/call ${ratio(envoy.serverUs, sluice.serverUs)}  [≤ 1.00]\n`);
    process.stdout.write(`  envoy+swc / sluice calls/s    ${ratio(swc.callsPerSec, sluice.callsPerSec)}\n`);
  } finally {
    server?.kill("SIGTERM");
    redis.disconnect();
    await own.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
