/**
 * `npm run bench`: the side-by-side run of #12 — wrk (Debian's, LuaJIT script bench/wrk/check.lua)
 * against node:http hello (bench/hello.ts), rate-limiter-flexible (bench/peer.ts), the lean
 * node:http + ioredis ceiling (bench/lean.ts) and Sluice's /v1/check, one sliding-window counter
 * per client IP over 100k addresses and one API key, all on one throwaway redis-server. Rounds are
 * interleaved (every target once per round, the order rotated) and each figure is the median of
 * the rounds. Per target: req/s, p50/p99, and CPU per decision of the server process and of
 * redis-server (utime + stime from /proc, divided by the decisions wrk counted). Sluice also runs
 * the deny path (one hot address far over its limit) and a batch of 100 checks per request, and
 * reports its store-budget miss rate at the default 25 ms budget (timeouts / decisions, from
 * /metrics), and the accuracy meter's cost: the single path with SLUICE_ACCURACY_SAMPLE=0 beside
 * SLUICE_ACCURACY_SAMPLE=1 (every subject also counted by the exact log). req/s swings with
 * whatever else the machine runs: read CPU per decision and the ratios of one run.
 *
 * BENCH_SECONDS (default 8) per run, BENCH_ROUNDS (default 3), BENCH_CONNECTIONS (default 50).
 * Another path is one more entry in `targets` (a server to start and the wrk settings to use).
 * The per-path autocannon bench (p99 at a fixed 5k req/s, two instances, gRPC) is `npm run bench:paths`.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { compileFixture, writeFixturePolicy } from "../lib/decision/testing/fixture";
import { freePort } from "../lib/net/ports";
import { startOwnRedis } from "../lib/net/redis-server";
import { sha256Hex } from "../lib/redis/key-index";

const ROOT = path.resolve(import.meta.dirname, "..");
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Math.max(3, Number(process.env.BENCH_ROUNDS ?? 3));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const TOKEN = "bench_service_token";
const KEY = "sk_bench_side_by_side_0001";
const CLK_TCK = 100;
const run = promisify(execFile);

interface Proc {
  name: string;
  child: ChildProcess;
  url: string;
}

async function start(name: string, script: string, env: Record<string, string>, ready: string): Promise<Proc> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, script)], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), DECISION_PORT: String(port), DECISION_HOST: "127.0.0.1", SLUICE_GRPC_PORT: String(await freePort()) },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`${name} exited`);
    const ok = await fetch(`${url}${ready}`).then((r) => r.status < 500, () => false);
    if (ok) return { name, child, url };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} did not start`);
}

function cpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(fields[11]) + Number(fields[12])) / CLK_TCK) * 1e6;
}

async function metric(url: string, pattern: RegExp): Promise<number> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text());
  let sum = 0;
  for (const line of text.split("\n")) if (pattern.test(line)) sum += Number(line.split(" ").pop());
  return sum;
}

interface Target {
  name: string;
  proc: Proc;
  /** wrk's environment for check.lua. */
  wrk: Record<string, string>;
  /** Decisions per request (a batch carries 100). */
  perRequest: number;
  sluice?: boolean;
}

interface Sample {
  reqPerSec: number;
  decisionsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  serverUs: number;
  redisUs: number;
  errors: number;
  missRate: number | null;
}

async function measure(t: Target, redisPid: number): Promise<Sample> {
  const decisionsBefore = t.sluice ? await metric(t.proc.url, /^sluice_decisions_total/) : 0;
  const missesBefore = t.sluice ? await metric(t.proc.url, /^sluice_redis_errors_total\{kind="timeout"\}/) : 0;
  const server0 = cpuUs(t.proc.child.pid!);
  const redis0 = cpuUs(redisPid);
  const { stdout } = await run("/usr/bin/wrk", ["-t1", `-c${CONNECTIONS}`, `-d${SECONDS}s`, "-s", path.join(ROOT, "bench/wrk/check.lua"), `${t.proc.url}${t.wrk.BENCH_PATH ?? "/v1/check"}`], {
    env: { ...process.env, BENCH_TOKEN: TOKEN, BENCH_KEY: KEY, ...t.wrk },
    maxBuffer: 1 << 20,
  });
  const server = cpuUs(t.proc.child.pid!) - server0;
  const redisCpu = cpuUs(redisPid) - redis0;
  const line = stdout.split("\n").find((l) => l.startsWith("RESULT "));
  if (!line) throw new Error(`wrk printed no RESULT for ${t.name}: ${stdout}`);
  const [requests, durationUs, p50Us, p99Us, errors] = line.split(" ").slice(1).map(Number) as [number, number, number, number, number];
  const decisions = requests * t.perRequest;
  let missRate: number | null = null;
  if (t.sluice) {
    const decided = (await metric(t.proc.url, /^sluice_decisions_total/)) - decisionsBefore;
    const misses = (await metric(t.proc.url, /^sluice_redis_errors_total\{kind="timeout"\}/)) - missesBefore;
    missRate = decided > 0 ? misses / decided : 0;
  }
  return {
    reqPerSec: requests / (durationUs / 1e6),
    decisionsPerSec: decisions / (durationUs / 1e6),
    p50Ms: p50Us / 1000,
    p99Ms: p99Us / 1000,
    serverUs: decisions > 0 ? server / decisions : 0,
    redisUs: decisions > 0 ? redisCpu / decisions : 0,
    errors,
    missRate,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

async function main(): Promise<void> {
  const prefix = `bench${process.pid}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  const own = await startOwnRedis();
  const redis = new Redis(own.url);
  const procs: Proc[] = [];
  try {
    // One tenant, one key; a sliding-window counter per client IP that never denies the single path,
    // and one far over its limit for the deny path (the same fixed address every request).
    await writeFixturePolicy(
      redis,
      compileFixture({
        version: 1,
        defaults: { failureMode: "open" },
        operations: [{ name: "orders-read", match: ["GET /v1/orders"] }],
        tiers: [{ name: "bench", limits: [{ operation: "*", scope: "ip", algorithm: "sliding_window_counter", limit: 1_000_000_000, window: "1m" }] }, { name: "deny", limits: [{ operation: "*", scope: "ip", algorithm: "sliding_window_counter", limit: 1, window: "1h" }] }],
        tenants: [
          { slug: "bench", name: "Bench", tier: "bench", keys: [{ name: "k", key: KEY }] },
          { slug: "denier", name: "Denier", tier: "deny", keys: [{ name: "k", key: `${KEY}_deny` }] },
        ],
      }),
      [sha256Hex(TOKEN)],
    );
    // The product's defaults (25 ms budget): the budget's miss rate under load is one of the figures.
    const sluiceEnv = { REDIS_URL: own.url, SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: TOKEN };
    const [hello, peer, lean, sluice, meterOff, meterAll] = await Promise.all([
      start("hello", "bench/hello.ts", {}, "/"),
      start("peer", "bench/peer.ts", { REDIS_URL: own.url }, "/"),
      start("lean", "bench/lean.ts", { REDIS_URL: own.url }, "/"),
      start("sluice", "worker/decision-server.ts", sluiceEnv, "/readyz"),
      // The accuracy meter's cost on sampled subjects (#16): off, and every subject sampled.
      start("sluice-meter-off", "worker/decision-server.ts", { ...sluiceEnv, SLUICE_ACCURACY_SAMPLE: "0" }, "/readyz"),
      start("sluice-meter-all", "worker/decision-server.ts", { ...sluiceEnv, SLUICE_ACCURACY_SAMPLE: "1" }, "/readyz"),
    ]);
    procs.push(hello, peer, lean, sluice, meterOff, meterAll);
    const targets: Target[] = [
      { name: "node:http hello", proc: hello, wrk: { BENCH_PATH: "/" }, perRequest: 1 },
      { name: "rate-limiter-flexible", proc: peer, wrk: { BENCH_PATH: "/" }, perRequest: 1 },
      { name: "lean node:http + ioredis", proc: lean, wrk: { BENCH_PATH: "/" }, perRequest: 1 },
      { name: "Sluice /v1/check", proc: sluice, wrk: {}, perRequest: 1, sluice: true },
      { name: "Sluice deny path", proc: sluice, wrk: { BENCH_KEY: `${KEY}_deny`, BENCH_FIXED_IP: "192.0.2.1" }, perRequest: 1, sluice: true },
      { name: "Sluice batch of 100", proc: sluice, wrk: { BENCH_BATCH: "100" }, perRequest: 100, sluice: true },
      { name: "Sluice, accuracy meter off", proc: meterOff, wrk: {}, perRequest: 1, sluice: true },
      { name: "Sluice, every subject sampled", proc: meterAll, wrk: {}, perRequest: 1, sluice: true },
    ];
    // Warm-up: JIT, scripts loaded, key caches, the deny address over its limit.
    for (const t of targets) await measure({ ...t }, own.pid()!).catch((e: unknown) => process.stderr.write(`warm-up ${t.name}: ${String(e)}\n`));
    const samples = new Map<string, Sample[]>(targets.map((t) => [t.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
      for (const t of order) {
        const s = await measure(t, own.pid()!);
        samples.get(t.name)!.push(s);
        process.stdout.write(`round ${round + 1} ${t.name.padEnd(26)} ${s.decisionsPerSec.toFixed(0).padStart(8)} dec/s  server ${s.serverUs.toFixed(1)} µs  redis ${s.redisUs.toFixed(1)} µs  p99 ${s.p99Ms.toFixed(1)} ms${s.missRate !== null ? `  budget misses ${(s.missRate * 100).toFixed(3)}%` : ""}${s.errors ? `  errors ${s.errors}` : ""}\n`);
      }
    }
    const row = (name: string) => {
      const xs = samples.get(name)!;
      const m = (f: (s: Sample) => number) => median(xs.map(f));
      return { req: m((s) => s.reqPerSec), dec: m((s) => s.decisionsPerSec), p99: m((s) => s.p99Ms), server: m((s) => s.serverUs), redis: m((s) => s.redisUs), miss: xs[0]!.missRate === null ? null : m((s) => s.missRate!) };
    };
    const peerDec = row("rate-limiter-flexible").dec;
    const leanDec = row("lean node:http + ioredis").dec;
    const helloDec = row("node:http hello").dec;
    const singleDec = row("Sluice /v1/check").dec;
    process.stdout.write(`\nwrk -t1 -c${CONNECTIONS}, ${SECONDS} s per run, medians of ${ROUNDS} interleaved rounds\n\n`);
    process.stdout.write("| target | req/s | decisions/s | p99 ms | server CPU µs / decision | Redis CPU µs / decision | vs |\n| --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for (const t of targets) {
      const r = row(t.name);
      const vs =
        t.name === "Sluice /v1/check"
          ? `${(r.dec / peerDec).toFixed(2)}× rate-limiter-flexible, ${(r.dec / leanDec).toFixed(2)}× lean`
          : t.name === "Sluice deny path"
            ? `${(r.dec / helloDec).toFixed(2)}× hello`
            : t.name === "Sluice batch of 100"
              ? `${(r.dec / singleDec).toFixed(1)}× single-check decisions/s`
              : t.name === "Sluice, every subject sampled"
                ? meterCost(r, row("Sluice, accuracy meter off"))
                : "";
      const miss = r.miss === null ? "" : ` (budget misses ${(r.miss * 100).toFixed(3)}%)`;
      process.stdout.write(`| ${t.name} | ${r.req.toFixed(0)} | ${r.dec.toFixed(0)} | ${r.p99.toFixed(1)} | ${r.server.toFixed(1)} | ${t.name === "node:http hello" ? "—" : r.redis.toFixed(1)} | ${vs}${miss} |\n`);
    }
  } finally {
    for (const p of procs) p.child.kill("SIGTERM");
    redis.disconnect();
    await own.stop();
  }
}

/** What the accuracy meter's exact log adds per sampled decision, against the meter off. */
function meterCost(all: { server: number; redis: number }, off: { server: number; redis: number }): string {
  const sign = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(1)}`;
  return `meter cost per sampled decision: ${sign(all.server - off.server)} µs server CPU, ${sign(all.redis - off.redis)} µs Redis CPU vs meter off`;
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
