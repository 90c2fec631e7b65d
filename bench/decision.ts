/**
 * `npm run bench`: Sluice's decision server side by side with the HTTP ceiling (bench/hello.ts) and
 * a peer baseline (bench/peer.ts: rate-limiter-flexible + node:http), in one run, on one throwaway
 * redis-server, with autocannon on the same box. Absolute numbers swing ±30% between runs on
 * shared machines: read the ratios.
 *
 * Paths: single check over 100k keys; deny-heavy (every request denied); batch of 100 checks per
 * request; two Sluice instances behind one load; p99 at a fixed 5k req/s; and the single and
 * deny-heavy paths again over gRPC (Envoy's rate limit service protocol, one descriptor per call,
 * bench/grpc-load.ts as the load generator in its own process). For each: req/s (and
 * decisions/s), p50/p99 latency, CPU µs per decision in the server process (/proc utime+stime) and
 * in Redis (INFO commandstats usec). Whole run ≈ 1.5–2 minutes (BENCH_SECONDS per path, default 6).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { createRequire } from "node:module";
import path from "node:path";
import { Redis } from "ioredis";
import { compileFixture, writeFixturePolicy } from "../lib/decision/testing/fixture";
import { DECISION_NODE_FLAGS } from "../lib/decision/process-flags";
import { freePort } from "../lib/net/ports";
import { startOwnRedis } from "../lib/processes/redis-server";
import { sha256Hex } from "../lib/redis/key-index";
import { keys } from "../lib/redis/keys";

interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (req: AutocannonRequest) => AutocannonRequest;
}
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  duration: number;
}
type Autocannon = (opts: {
  url: string;
  connections: number;
  duration: number;
  pipelining?: number;
  overallRate?: number;
  requests?: AutocannonRequest[];
  headers?: Record<string, string>;
  method?: string;
  body?: string;
}) => Promise<AutocannonResult>;

const require = createRequire(import.meta.url);
const autocannon = require("autocannon") as Autocannon;

const ROOT = path.resolve(import.meta.dirname, "..");
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const KEY_COUNT = 100_000;
const TOKEN = "bench_service_token";
const PREFIX = "bench:";
const CLK_TCK = 100;

function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[11] = utime, fields[12] = stime (fields 14 and 15 of the full line)
  return Number(fields[11]) + Number(fields[12]);
}

/** Jiffies of the whole machine: [busy, total] (/proc/stat's first line). */
function machineTicks(): [number, number] {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0); // idle + iowait
  return [total - idle, total];
}

async function redisUsec(redis: Redis): Promise<number> {
  const info = await redis.info("commandstats");
  let total = 0;
  for (const m of info.matchAll(/usec=(\d+)/g)) total += Number(m[1]);
  return total;
}

async function waitHttp(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.status < 500) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

interface Proc {
  name: string;
  url: string;
  child: ChildProcess;
}

async function start(name: string, file: string, env: Record<string, string>, readyPath: string): Promise<Proc> {
  const port = await freePort();
  // BENCH_SLUICE_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") goes to the decision servers only.
  const extra = file.startsWith("worker/") ? [...DECISION_NODE_FLAGS, ...(process.env.BENCH_SLUICE_NODE_ARGS ?? "").split(" ").filter(Boolean)] : [];
  const child = spawn(process.execPath, [...extra, "--import", "tsx", path.join(ROOT, file)], {
    cwd: ROOT,
    env: { ...process.env, SLUICE_GRPC_PORT: "0", ...env, PORT: String(port), DECISION_PORT: String(port), DECISION_HOST: "127.0.0.1", LOG_LEVEL: "warn" },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitHttp(`${url}${readyPath}`);
  return { name, url, child };
}

interface Row {
  path: string;
  target: string;
  reqPerSec: number;
  decisionsPerSec: number;
  p50: number;
  p99: number;
  cpuUsPerDecision: number;
  redisUsPerDecision: number;
  non2xx: number;
  /** Share of decisions answered without the store (failure mode) — must be ~0 for a fair figure. */
  degradedShare: number;
  /** CPU µs per request of autocannon itself (this process), which shares the machine's cores. */
  loadgenUsPerRequest: number;
  /** Share of the machine's CPU time that was busy during the run (every core, every process). */
  machineBusy: number;
}

/** sluice_decisions_total by outcome, summed over every process that has the metric. */
async function outcomes(procs: Proc[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const p of procs) {
    const text = await fetch(`${p.url}/metrics`).then((r) => (r.status === 200 ? r.text() : ""), () => "");
    for (const m of text.matchAll(/^sluice_decisions_total\{outcome="([a-z_]+)"[^}]*\} (\d+)/gm)) {
      out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
    }
  }
  return out;
}

async function measure(
  label: string,
  target: string,
  procs: Proc[],
  redis: Redis,
  makeRequest: () => AutocannonRequest,
  options: { decisionsPerRequest?: number; overallRate?: number; seconds?: number; connections?: number } = {},
): Promise<Row> {
  const outcomesBefore = await outcomes(procs);
  const ticksBefore = procs.map((p) => cpuTicks(p.child.pid!));
  const usecBefore = await redisUsec(redis);
  const loadgenBefore = process.cpuUsage();
  const machineBefore = machineTicks();
  const runs = await Promise.all(
    procs.map((p) =>
      autocannon({
        url: `${p.url}/v1/check`,
        connections: Math.max(1, Math.round((options.connections ?? CONNECTIONS) / procs.length)),
        duration: options.seconds ?? SECONDS,
        overallRate: options.overallRate,
        requests: [{ method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, setupRequest: (req) => ({ ...req, ...makeRequest() }) }],
      }),
    ),
  );
  const loadgen = process.cpuUsage(loadgenBefore);
  const machineAfter = machineTicks();
  const ticks = procs.reduce((sum, p, i) => sum + cpuTicks(p.child.pid!) - ticksBefore[i]!, 0);
  const usec = (await redisUsec(redis)) - usecBefore;
  const total = runs.reduce((s, r) => s + r.requests.total, 0);
  const decisions = total * (options.decisionsPerRequest ?? 1);
  const reqPerSec = runs.reduce((s, r) => s + r.requests.average, 0);
  const outcomesAfter = await outcomes(procs);
  const delta = (k: string) => (outcomesAfter[k] ?? 0) - (outcomesBefore[k] ?? 0);
  const counted = Object.keys(outcomesAfter).reduce((sum, k) => sum + delta(k), 0);
  const row: Row = {
    path: label,
    target,
    reqPerSec,
    decisionsPerSec: reqPerSec * (options.decisionsPerRequest ?? 1),
    p50: Math.max(...runs.map((r) => r.latency.p50)),
    p99: Math.max(...runs.map((r) => r.latency.p99)),
    cpuUsPerDecision: decisions > 0 ? ((ticks / CLK_TCK) * 1e6) / decisions : 0,
    redisUsPerDecision: decisions > 0 ? usec / decisions : 0,
    non2xx: runs.reduce((s, r) => s + r.non2xx + r.errors, 0),
    degradedShare: counted > 0 ? (delta("degraded") + delta("unavailable")) / counted : 0,
    loadgenUsPerRequest: total > 0 ? (loadgen.user + loadgen.system) / total : 0,
    machineBusy: (machineAfter[0] - machineBefore[0]) / Math.max(1, machineAfter[1] - machineBefore[1]),
  };
  process.stdout.write(
    `  ${label.padEnd(22)} ${target.padEnd(14)} ${row.reqPerSec.toFixed(0).padStart(7)} req/s ${row.decisionsPerSec.toFixed(0).padStart(8)} dec/s  p50 ${row.p50} ms  p99 ${row.p99} ms  cpu ${row.cpuUsPerDecision.toFixed(1)} µs  redis ${row.redisUsPerDecision.toFixed(1)} µs  loadgen ${row.loadgenUsPerRequest.toFixed(0)} µs/req  machine ${(row.machineBusy * 100).toFixed(0)}% busy${row.degradedShare > 0 ? `  degraded ${(row.degradedShare * 100).toFixed(1)}%` : ""}${row.non2xx ? `  non2xx ${row.non2xx}` : ""}\n`,
  );
  return row;
}

/**
 * A gRPC path: bench/grpc-load.ts against one Sluice instance's rate limit service, measured like
 * `measure` (server CPU from /proc, Redis usec, the load generator's own CPU as it reports it).
 */
async function measureGrpc(label: string, proc: Proc & { grpcAddress: string }, redis: Redis, keyPattern: string, keyCount: number, seconds = SECONDS): Promise<Row> {
  const loadgen = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/grpc-load.ts")], {
    cwd: ROOT,
    env: { ...process.env, RLS_ADDRESS: proc.grpcAddress, TOKEN, SECONDS: String(seconds), CONCURRENCY: String(CONNECTIONS), KEY_PATTERN: keyPattern, KEY_COUNT: String(keyCount) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  loadgen.stdout.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => loadgen.once("exit", resolve));
  // From the load generator's `start` (both ends warm) to its end.
  while (!out.includes("start\n") && loadgen.exitCode === null) await new Promise((r) => setTimeout(r, 5));
  const ticksBefore = cpuTicks(proc.child.pid!);
  const machineBefore = machineTicks();
  const [outcomesBefore, usecBefore] = await Promise.all([outcomes([proc]), redisUsec(redis)]);
  const code = await exited;
  if (code !== 0) throw new Error(`grpc-load exited ${code}`);
  const r = JSON.parse(out.trim().split("\n").pop()!) as { calls: number; errors: number; overLimit: number; p50: number; p99: number; cpuUs: number; seconds: number };
  const machineAfter = machineTicks();
  const ticks = cpuTicks(proc.child.pid!) - ticksBefore;
  const usec = (await redisUsec(redis)) - usecBefore;
  const outcomesAfter = await outcomes([proc]);
  const delta = (k: string) => (outcomesAfter[k] ?? 0) - (outcomesBefore[k] ?? 0);
  const counted = Object.keys(outcomesAfter).reduce((sum, k) => sum + delta(k), 0);
  const row: Row = {
    path: label,
    target: "sluice gRPC",
    reqPerSec: r.calls / r.seconds,
    decisionsPerSec: r.calls / r.seconds,
    p50: r.p50,
    p99: r.p99,
    cpuUsPerDecision: r.calls > 0 ? ((ticks / CLK_TCK) * 1e6) / r.calls : 0,
    redisUsPerDecision: r.calls > 0 ? usec / r.calls : 0,
    non2xx: r.errors,
    degradedShare: counted > 0 ? (delta("degraded") + delta("unavailable")) / counted : 0,
    loadgenUsPerRequest: r.calls > 0 ? r.cpuUs / r.calls : 0,
    machineBusy: (machineAfter[0] - machineBefore[0]) / Math.max(1, machineAfter[1] - machineBefore[1]),
  };
  process.stdout.write(
    `  ${label.padEnd(22)} ${row.target.padEnd(14)} ${row.reqPerSec.toFixed(0).padStart(7)} req/s ${row.decisionsPerSec.toFixed(0).padStart(8)} dec/s  p50 ${row.p50} ms  p99 ${row.p99} ms  cpu ${row.cpuUsPerDecision.toFixed(1)} µs  redis ${row.redisUsPerDecision.toFixed(1)} µs  loadgen ${row.loadgenUsPerRequest.toFixed(0)} µs/req  machine ${(row.machineBusy * 100).toFixed(0)}% busy${row.degradedShare > 0 ? `  degraded ${(row.degradedShare * 100).toFixed(1)}%` : ""}${row.non2xx ? `  errors ${row.non2xx}` : ""}\n`,
  );
  return row;
}

async function main(): Promise<void> {
  const startedMs = Date.now();
  process.env.SLUICE_REDIS_PREFIX = PREFIX;
  const own = await startOwnRedis();
  const redis = new Redis(own.url);
  const procs: Proc[] = [];
  try {
    // Policy: one tier that never limits the single path (so every decision runs the full script)
    // and one whose keys are all spent (the deny-heavy path).
    const fixture = compileFixture({
      version: 1,
      defaults: { failureMode: "open" },
      operations: [{ name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] }],
      tiers: [
        { name: "bench", limits: [{ operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 1_000_000_000, window: "1m" }] },
        { name: "deny", limits: [{ operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 1, window: "1h" }] },
      ],
      tenants: [
        { slug: "bench", name: "Bench", tier: "bench" },
        { slug: "denier", name: "Denier", tier: "deny" },
      ],
    });
    await writeFixturePolicy(redis, fixture, [sha256Hex(TOKEN)]);
    const benchKeys = Array.from({ length: KEY_COUNT }, (_, i) => `bk_${i.toString(36)}_bench`);
    const denyKeys = Array.from({ length: 100 }, (_, i) => `dk_${i}_deny`);
    for (let i = 0; i < benchKeys.length; i += 5_000) {
      await redis.hset(keys.keyIndex(), Object.fromEntries(benchKeys.slice(i, i + 5_000).map((k) => [sha256Hex(k), "bench"])));
    }
    await redis.hset(keys.keyIndex(), Object.fromEntries(denyKeys.map((k) => [sha256Hex(k), "denier"])));

    // A lenient store timeout: the bench measures the Redis path, not the failure path (a decision
    // answered degraded would flatter the figures; the "degraded" column shows any that were).
    const sluiceEnv = { REDIS_URL: own.url, SLUICE_REDIS_PREFIX: PREFIX, SLUICE_SERVICE_TOKENS: TOKEN, REDIS_TIMEOUT_MS: "2000", POLICY_POLL_MS: "5000", SLUICE_DECISION_PROCESSES: "1" };
    const grpcPort = await freePort();
    const [hello, peer, peerDeny, sluiceHttp, sluice2] = await Promise.all([
      start("hello", "bench/hello.ts", {}, "/"),
      start("peer", "bench/peer.ts", { REDIS_URL: own.url }, "/"),
      start("peer-deny", "bench/peer.ts", { REDIS_URL: own.url, LIMIT: "1" }, "/"),
      start("sluice", "worker/decision-server.ts", { ...sluiceEnv, SLUICE_GRPC_PORT: String(grpcPort) }, "/readyz"),
      start("sluice-2", "worker/decision-server.ts", sluiceEnv, "/readyz"),
    ]);
    const sluice = { ...sluiceHttp, grpcAddress: `127.0.0.1:${grpcPort}` };
    procs.push(hello, peer, peerDeny, sluice, sluice2);

    // Spend the deny keys (both limiters), then warm every process up.
    for (const k of denyKeys) {
      await fetch(`${sluice.url}/v1/check`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ key: k, operation: "GET /v1/orders" }) });
      await fetch(`${peerDeny.url}/`, { method: "POST", body: JSON.stringify({ key: k }) });
    }
    const rand = (n: number) => Math.floor(Math.random() * n);
    const single = () => ({ body: JSON.stringify({ key: benchKeys[rand(KEY_COUNT)], operation: "GET /v1/orders/42" }) });
    const deny = () => ({ body: JSON.stringify({ key: denyKeys[rand(denyKeys.length)], operation: "GET /v1/orders/42" }) });
    const batch = () => ({
      body: JSON.stringify({ requests: Array.from({ length: 100 }, () => ({ key: benchKeys[rand(KEY_COUNT)], operation: "GET /v1/orders/42" })) }),
    });
    process.stdout.write(`warming up (100k keys into every key cache)…\n`);
    await Promise.all(
      [hello, peer, sluice, sluice2].map((p) => autocannon({ url: `${p.url}/v1/check`, connections: 20, duration: 3, requests: [{ method: "POST", headers: { authorization: `Bearer ${TOKEN}` }, setupRequest: (r) => ({ ...r, ...batch() }) }] })),
    );

    // The random batches above reach only part of the 100k keys; a key not yet cached costs an
    // extra HGET round trip, which a server in steady state (keys cached for 5 minutes) does not
    // pay. So every key goes through each Sluice instance once, in order.
    const warmStarted = Date.now();
    for (const p of [sluice, sluice2]) {
      const chunks = Array.from({ length: KEY_COUNT / 100 }, (_, c) => benchKeys.slice(c * 100, c * 100 + 100));
      for (let at = 0; at < chunks.length; at += 8) {
        await Promise.all(
          chunks.slice(at, at + 8).map((chunk) =>
            fetch(`${p.url}/v1/check`, {
              method: "POST",
              headers: { authorization: `Bearer ${TOKEN}` },
              body: JSON.stringify({ requests: chunk.map((key) => ({ key, operation: "GET /v1/orders/42" })) }),
            }).then((r) => r.arrayBuffer()),
          ),
        );
      }
    }
    process.stdout.write(`every key through every key cache in ${((Date.now() - warmStarted) / 1000).toFixed(1)} s\n`);

    process.stdout.write(`\nSluice decision server benchmark — ${CONNECTIONS} connections, ${SECONDS} s per path, own redis-server\n`);
    const rows: Row[] = [];
    rows.push(await measure("single (100k keys)", "hello", [hello], redis, single));
    rows.push(await measure("single (100k keys)", "peer", [peer], redis, single));
    rows.push(await measure("single (100k keys)", "sluice", [sluice], redis, single));
    rows.push(await measure("deny-heavy", "hello", [hello], redis, deny));
    rows.push(await measure("deny-heavy", "peer", [peerDeny], redis, deny));
    rows.push(await measure("deny-heavy", "sluice", [sluice], redis, deny));
    rows.push(await measure("batch of 100", "sluice", [sluice], redis, batch, { decisionsPerRequest: 100, connections: 8 }));
    rows.push(await measure("single, 2 instances", "sluice x2", [sluice, sluice2], redis, single));
    rows.push(await measure("p99 at 5k req/s", "hello", [hello], redis, single, { overallRate: 5_000, seconds: 5 }));
    rows.push(await measure("p99 at 5k req/s", "sluice", [sluice], redis, single, { overallRate: 5_000, seconds: 5 }));
    process.stdout.write(`  (gRPC: warming up its path for 3 s)\n`);
    await measureGrpc("warm-up", sluice, redis, "bk_{i}_bench", KEY_COUNT, 3);
    rows.push(await measureGrpc("single (100k keys)", sluice, redis, "bk_{i}_bench", KEY_COUNT));
    rows.push(await measureGrpc("deny-heavy", sluice, redis, "dk_{d}_deny", denyKeys.length));

    const get = (p: string, t: string) => rows.find((r) => r.path === p && r.target === t)!;
    const ratio = (a: number, b: number) => (b > 0 ? a / b : 0).toFixed(2);
    const s1 = get("single (100k keys)", "sluice");
    const h1 = get("single (100k keys)", "hello");
    const p1 = get("single (100k keys)", "peer");
    const sd = get("deny-heavy", "sluice");
    const hd = get("deny-heavy", "hello");
    const b = get("batch of 100", "sluice");
    const two = get("single, 2 instances", "sluice x2");
    const h5 = get("p99 at 5k req/s", "hello");
    const s5 = get("p99 at 5k req/s", "sluice");
    const g1 = get("single (100k keys)", "sluice gRPC");
    const gd = get("deny-heavy", "sluice gRPC");
    process.stdout.write(`\nratios (goal in brackets)\n`);
    process.stdout.write(`  single: sluice / hello        ${ratio(s1.reqPerSec, h1.reqPerSec)}  [≥ 0.90]\n`);
    process.stdout.write(`  single: sluice / peer         ${ratio(s1.reqPerSec, p1.reqPerSec)}  [≥ 1.40]\n`);
    process.stdout.write(`  deny:   sluice / hello        ${ratio(sd.reqPerSec, hd.reqPerSec)}  [≥ 0.95]\n`);
    process.stdout.write(`  batch:  decisions/s           ${b.decisionsPerSec.toFixed(0)}  [≥ 90000]\n`);
    process.stdout.write(`  2 instances / 1 instance      ${ratio(two.reqPerSec, s1.reqPerSec)}  (same 2 cores: no gain expected here)\n`);
    process.stdout.write(`  p99 at 5k: sluice / hello     ${ratio(s5.p99, h5.p99)}  [≤ 2.00]  (${s5.p99} ms vs ${h5.p99} ms)\n`);
    process.stdout.write(`  gRPC / HTTP decisions/s: single ${ratio(g1.decisionsPerSec, s1.decisionsPerSec)}, deny ${ratio(gd.decisionsPerSec, sd.decisionsPerSec)}  [≥ 1.00]\n`);
    process.stdout.write(`  gRPC / HTTP server CPU µs per decision: single ${ratio(g1.cpuUsPerDecision, s1.cpuUsPerDecision)}, deny ${ratio(gd.cpuUsPerDecision, sd.cpuUsPerDecision)}  [≤ 1.00]\n`);
    process.stdout.write(`  redis µs/decision: sluice ${s1.redisUsPerDecision.toFixed(1)}, peer ${p1.redisUsPerDecision.toFixed(1)}, deny ${sd.redisUsPerDecision.toFixed(2)}, batch ${b.redisUsPerDecision.toFixed(1)}\n`);
    // Every process here shares the machine's cores, so a path's req/s is bounded by the sum of
    // what each request costs all of them: the load generator, the server and Redis.
    const cores = availableParallelism();
    const costOf = (r: Row) => r.loadgenUsPerRequest + r.cpuUsPerDecision + r.redisUsPerDecision;
    process.stdout.write(`\nCPU µs per request, all processes (${cores} cores: ceiling = ${cores} s / cost)\n`);
    for (const [label, r] of [["single hello", h1], ["single peer", p1], ["single sluice", s1], ["single gRPC", g1], ["deny hello", hd], ["deny sluice", sd], ["deny gRPC", gd]] as const) {
      process.stdout.write(
        `  ${label.padEnd(14)} loadgen ${r.loadgenUsPerRequest.toFixed(0).padStart(3)} + server ${r.cpuUsPerDecision.toFixed(0).padStart(3)} + redis ${r.redisUsPerDecision.toFixed(0).padStart(2)} = ${costOf(r).toFixed(0).padStart(3)} µs → ceiling ${((cores * 1e6) / costOf(r)).toFixed(0).padStart(6)} req/s, reached ${r.reqPerSec.toFixed(0)} (machine ${(r.machineBusy * 100).toFixed(0)}% busy)\n`,
      );
    }
    process.stdout.write(`  server CPU per decision, hello / sluice: single ${ratio(h1.cpuUsPerDecision, s1.cpuUsPerDecision)}, deny ${ratio(hd.cpuUsPerDecision, sd.cpuUsPerDecision)}\n`);
    process.stdout.write(`\nwhole run ${((Date.now() - startedMs) / 1000).toFixed(0)} s\n`);
  } finally {
    for (const p of procs) p.child.kill("SIGTERM");
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
