/**
 * `npm run bench`: the side-by-side run of #12 — wrk (Debian's, LuaJIT script bench/wrk/check.lua)
 * against node:http hello (bench/hello.ts), rate-limiter-flexible (bench/peer.ts), the lean
 * node:http + ioredis ceiling (bench/lean.ts) and Sluice's /v1/check, one sliding-window counter
 * per client IP over 100k addresses and one API key, each server on a throwaway redis-server of its own (the policy
 * is bench/bench-policy.ts). Sluice also runs the deny path (one hot address far over its limit), a
 * batch of 100 checks per request and the demo policy's shape (four counters per request: three
 * limits and a quota), and hello and Sluice are loaded at a fixed 5k req/s by bench/fixed-rate.ts
 * (wrk2 is not packaged here; plain wrk cannot hold a rate) for the p99 at that rate. And the
 * accuracy meter's cost (#16): the single path on a server with SLUICE_ACCURACY_SAMPLE=0 beside one
 * with SLUICE_ACCURACY_SAMPLE=1 (every subject also counted by the exact log).
 *
 * Rounds are interleaved (every target once per round, the order rotated) and each figure is the
 * median of the rounds. Per target: req/s, decisions/s, p50/p99, and the CPU per decision of the
 * server process (with its descendants) and of redis-server (utime + stime from /proc, divided by
 * the decisions counted) — the figure that holds on a loaded machine, where req/s swings. The
 * load average is printed at the start and the end; the goals of #12 are checked at the end.
 *
 * BENCH_SECONDS (default 5) per run, BENCH_ROUNDS (default 5: three gave medians that moved by a µs between runs), BENCH_CONNECTIONS (default 50),
 * BENCH_FIXED_RATE (default 5000), BENCH_PROCESSES (default 1; 2 adds /v1/check on a server of two
 * decision processes). Every baseline also runs a second time with the decision servers' Node flags
 * (lib/decision/process-flags.ts), rows marked "with Sluice's flags": the goals are judged against
 * the plain baselines (as when they were set, #12 and #27) and, beside them, like for like.
 * About 10 minutes with the defaults. The gRPC rows need h2load (Debian's
 * nghttp2-client).
 * Another path is one more entry in `targets` (a server to start and the load to put on it).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { DECISION_NODE_FLAGS } from "../lib/decision/process-flags";
import { freePort } from "../lib/net/ports";
import { type OwnRedis, startOwnRedis } from "../lib/processes/redis-server";
import { BENCH_DEMO_KEY, BENCH_DENY_KEY, BENCH_ENVOY_DOMAIN, BENCH_KEY, BENCH_TOKEN, publishBenchPolicy } from "./bench-policy";
import { h2loadRlsLoad, wrkLoad } from "./loads";
import { cpuUs } from "./proc-cpu";
import { runBench } from "./run";

const ROOT = path.resolve(import.meta.dirname, "..");
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Math.max(3, Number(process.env.BENCH_ROUNDS ?? 5));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const FIXED_RATE = Number(process.env.BENCH_FIXED_RATE ?? 5_000);
/** BENCH_PROCESSES=N (> 1): one more row, /v1/check on a decision server of N processes (SLUICE_DECISION_PROCESSES, #12 item 2). */
const PROCESSES = Number(process.env.BENCH_PROCESSES ?? 1);
/** BENCH_ONLY=a,b: only the targets whose names contain one of these (case-insensitive), and only their servers are started; the goals are checked on full runs only. */
const ONLY = (process.env.BENCH_ONLY ?? "")
  .split(",")
  .map((s) => s.trim().toLowerCase())
  .filter((s) => s !== "");
/** The suffix of a baseline's twin run with the decision servers' Node flags. */
const FLAGGED = ", with Sluice's flags";
/** The gRPC rows' load generator (Debian's nghttp2-client); without it they are left out. */
const HAS_H2LOAD = existsSync("/usr/bin/h2load");
const run = promisify(execFile);

interface Proc {
  name: string;
  child: ChildProcess;
  url: string;
  /** The pid of its own redis-server (none for the hello servers). */
  redisPid: number | null;
  /** `127.0.0.1:<port>` of its gRPC rate limit service, when it serves one. */
  grpcAddress?: string;
}

async function start(name: string, script: string, env: Record<string, string>, ready: string, grpc = false, redisPid: number | null = null, flagged = false): Promise<Proc> {
  const port = await freePort();
  const grpcPort = grpc ? await freePort() : 0;
  // Decision servers run with the product's Node flags (lib/decision/process-flags.ts), as npm run decision does;
  // a baseline's flagged twin too (the flags alone make node:http2 hello and rate-limiter-flexible ~13 % faster).
  const flags = script === "worker/decision-server.ts" || flagged ? DECISION_NODE_FLAGS : [];
  const child = spawn(process.execPath, [...flags, "--import", "tsx", path.join(ROOT, script)], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), DECISION_PORT: String(port), DECISION_HOST: "127.0.0.1", SLUICE_GRPC_PORT: String(grpcPort) },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`${name} exited`);
    const ok = await fetch(`${url}${ready}`).then((r) => r.status < 500, () => false);
    if (ok) return { name, child, url, redisPid, ...(grpc ? { grpcAddress: `127.0.0.1:${grpcPort}` } : {}) };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} did not start`);
}

async function metric(url: string, pattern: RegExp): Promise<number> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text());
  let sum = 0;
  for (const line of text.split("\n")) if (pattern.test(line)) sum += Number(line.split(" ").pop());
  return sum;
}

/**
 * How a target is loaded: wrk at full speed (check.lua), bench/fixed-rate.ts at FIXED_RATE, or
 * h2load on the gRPC rate limit service (bench/h2load-rls.ts, #13).
 */
type Load = { tool: "wrk" | "fixed-rate" | "h2load-rls"; path: string; env: Record<string, string> };

/** A server, started on first use. */
type Server = () => Promise<Proc>;

interface Target {
  name: string;
  proc: Proc;
  /** A hello server (no Redis). */
  bare?: boolean;
  load: Load;
  /** Decisions per request (a batch carries 100). */
  perRequest: number;
  /** A Sluice decision server: its budget misses are read from /metrics. */
  sluice?: boolean;
}

/** A target before its server is started. */
type TargetSpec = Omit<Target, "proc"> & { proc: Server };

interface Sample {
  reqPerSec: number;
  decisionsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  serverUs: number;
  redisUs: number;
  errors: number;
  missRate: number | null;
  /** fixed-rate only: whether the rate was held (its queue never overflowed). */
  held: boolean;
}

async function measure(t: Target, seconds = SECONDS): Promise<Sample> {
  const redisPid = t.proc.redisPid;
  const decisionsBefore = t.sluice ? await metric(t.proc.url, /^sluice_decisions_total/) : 0;
  const missesBefore = t.sluice ? await metric(t.proc.url, /^sluice_redis_errors_total\{kind="timeout"\}/) : 0;
  const env = { ...process.env, BENCH_TOKEN, BENCH_KEY, ...t.load.env };
  const server0 = cpuUs(t.proc.child.pid!);
  const redis0 = redisPid === null ? 0 : cpuUs(redisPid);
  const stdout =
    t.load.tool === "wrk"
      ? await wrkLoad(`${t.proc.url}${t.load.path}`, seconds, CONNECTIONS, env)
      : t.load.tool === "h2load-rls"
        ? await h2loadRlsLoad(t.proc.grpcAddress!, `${t.proc.url}/metrics`, seconds, CONNECTIONS, env)
        : (
            await run(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/fixed-rate.ts")], {
              cwd: ROOT,
              env: { ...env, FIXED_URL: `${t.proc.url}${t.load.path}`, FIXED_RATE: String(FIXED_RATE), FIXED_SECONDS: String(seconds) },
              maxBuffer: 1 << 20,
            })
          ).stdout;
  const server = cpuUs(t.proc.child.pid!) - server0;
  const redisCpu = redisPid === null ? 0 : cpuUs(redisPid) - redis0;
  const line = stdout.split("\n").find((l) => l.startsWith("RESULT "));
  if (!line) throw new Error(`no RESULT for ${t.name}: ${stdout}`);
  const [requests, durationUs, p50Us, p99Us, errors] = line.split(" ").slice(1).map(Number) as [number, number, number, number, number];
  // CPU is divided by every decision made in the run (fixed-rate's first second included).
  const made = t.load.tool !== "fixed-rate" ? requests : requests + (FIXED_RATE * (seconds * 1e6 - durationUs)) / 1e6;
  const decisions = made * t.perRequest;
  let missRate: number | null = null;
  if (t.sluice) {
    const decided = (await metric(t.proc.url, /^sluice_decisions_total/)) - decisionsBefore;
    const misses = (await metric(t.proc.url, /^sluice_redis_errors_total\{kind="timeout"\}/)) - missesBefore;
    missRate = decided > 0 ? misses / decided : 0;
  }
  return {
    reqPerSec: requests / (durationUs / 1e6),
    decisionsPerSec: (requests * t.perRequest) / (durationUs / 1e6),
    p50Ms: p50Us / 1000,
    p99Ms: p99Us / 1000,
    serverUs: decisions > 0 ? server / decisions : 0,
    redisUs: decisions > 0 ? redisCpu / decisions : 0,
    errors,
    missRate,
    held: !/^HELD 0$/m.test(stdout),
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

async function main(): Promise<void> {
  const startLoad = load();
  const startedAt = new Date();
  const prefix = `bench${process.pid}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  // Every server has a redis-server of its own: a row's Redis CPU is then that server's work
  // alone. On one shared redis-server, the expiry of every other target's keys (each writes
  // ~100k counters a minute) was charged to whichever row was running — the single check, always
  // run right after lean in the rotation, showed 9.2 µs against 7.8 for an identical server run
  // elsewhere in the order.
  const redises: OwnRedis[] = [];
  const ownRedis = async (policy: boolean) => {
    const r = await startOwnRedis();
    redises.push(r);
    if (policy) {
      const client = new Redis(r.url);
      await publishBenchPolicy(client);
      client.disconnect();
    }
    return r;
  };
  const procs: Proc[] = [];
  try {
    // The product's defaults (25 ms budget): the budget's miss rate under load is one of the
    // figures. One decision process, as every other target is one process (1 vs N: bench:paths).
    const sluiceEnv = (r: OwnRedis) => ({ REDIS_URL: r.url, SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: BENCH_TOKEN, SLUICE_DECISION_PROCESSES: "1" });
    const startWithRedis = async (name: string, script: string, env: (r: OwnRedis) => Record<string, string>, ready: string, grpc = false, flagged = false) => {
      const r = await ownRedis(script === "worker/decision-server.ts");
      return start(name, script, env(r), ready, grpc, r.pid()!, flagged);
    };
    // Each server is started when a chosen target needs it (BENCH_ONLY runs start only theirs).
    const lazy = (starter: () => Promise<Proc>): Server => {
      let started: Promise<Proc> | null = null;
      return () => (started ??= starter().then((p) => (procs.push(p), p)));
    };
    // The baselines, and their twins with the decision servers' Node flags.
    const baselines = (flagged: boolean) => {
      const tag = flagged ? "-flagged" : "";
      const redisEnv = (r: OwnRedis) => ({ REDIS_URL: r.url });
      return {
        hello: lazy(() => start(`hello${tag}`, "bench/hello.ts", {}, "/", false, null, flagged)),
        peer: lazy(() => startWithRedis(`peer${tag}`, "bench/peer.ts", redisEnv, "/", false, flagged)),
        lean: lazy(() => startWithRedis(`lean${tag}`, "bench/lean.ts", redisEnv, "/", false, flagged)),
        // The gRPC transport's ceiling (#13): bare node:http2 answering a fixed RateLimitResponse.
        h2Hello: lazy(() => start(`h2-hello${tag}`, "bench/h2-hello.ts", {}, "/", true, null, flagged)),
      };
    };
    const plain = baselines(false);
    const flagged = baselines(true);
    const sluice = lazy(() => startWithRedis("sluice", "worker/decision-server.ts", sluiceEnv, "/readyz", true));
    // The accuracy meter's cost on sampled subjects (#16): off, and every subject sampled.
    const meterOff = lazy(() => startWithRedis("sluice-meter-off", "worker/decision-server.ts", (r) => ({ ...sluiceEnv(r), SLUICE_ACCURACY_SAMPLE: "0" }), "/readyz"));
    const meterAll = lazy(() => startWithRedis("sluice-meter-all", "worker/decision-server.ts", (r) => ({ ...sluiceEnv(r), SLUICE_ACCURACY_SAMPLE: "1" }), "/readyz"));
    const multi = lazy(() => startWithRedis(`sluice-${PROCESSES}p`, "worker/decision-server.ts", (r) => ({ ...sluiceEnv(r), SLUICE_DECISION_PROCESSES: String(PROCESSES) }), "/readyz"));
    const wrk = (p: string, env: Record<string, string> = {}): Load => ({ tool: "wrk", path: p, env });
    const fixedRate = (p: string): Load => ({ tool: "fixed-rate", path: p, env: {} });
    const h2loadRls = (key: string, address: string, extra: Record<string, string> = {}): Load => ({ tool: "h2load-rls", path: "", env: { BENCH_KEY: key, BENCH_FIXED_IP: address, ...extra } });
    const allTargets: TargetSpec[] = [
      ...[plain, flagged].flatMap((b, i): TargetSpec[] => [
        { name: `node:http hello${i ? FLAGGED : ""}`, proc: b.hello, load: wrk("/"), perRequest: 1, bare: true },
        { name: `rate-limiter-flexible${i ? FLAGGED : ""}`, proc: b.peer, load: wrk("/"), perRequest: 1 },
        { name: `lean node:http + ioredis${i ? FLAGGED : ""}`, proc: b.lean, load: wrk("/"), perRequest: 1 },
      ]),
      { name: "Sluice /v1/check", proc: sluice, load: wrk("/v1/check"), perRequest: 1, sluice: true },
      { name: "Sluice deny path", proc: sluice, load: wrk("/v1/check", { BENCH_KEY: BENCH_DENY_KEY, BENCH_FIXED_IP: "192.0.2.1" }), perRequest: 1, sluice: true },
      { name: "Sluice batch of 100", proc: sluice, load: wrk("/v1/check", { BENCH_BATCH: "100" }), perRequest: 100, sluice: true },
      { name: "Sluice demo policy (4 counters)", proc: sluice, load: wrk("/v1/check", { BENCH_KEY: BENCH_DEMO_KEY }), perRequest: 1, sluice: true },
      { name: `hello at ${FIXED_RATE / 1000}k req/s`, proc: plain.hello, load: fixedRate("/"), perRequest: 1, bare: true },
      { name: `Sluice at ${FIXED_RATE / 1000}k req/s`, proc: sluice, load: fixedRate("/v1/check"), perRequest: 1, sluice: true },
      { name: "Sluice, accuracy meter off", proc: meterOff, load: wrk("/v1/check"), perRequest: 1, sluice: true },
      { name: "Sluice, every subject sampled", proc: meterAll, load: wrk("/v1/check"), perRequest: 1, sluice: true },
      ...(PROCESSES > 1 ? [{ name: `Sluice /v1/check, ${PROCESSES} processes`, proc: multi, load: wrk("/v1/check"), perRequest: 1, sluice: true }] : []),
      // Envoy's rate limit service protocol (#13): the same decisions over gRPC (needs h2load).
      ...(HAS_H2LOAD
        ? [
            { name: "node:http2 gRPC hello", proc: plain.h2Hello, load: h2loadRls(BENCH_KEY, "203.0.113.7"), perRequest: 1, bare: true },
            { name: `node:http2 gRPC hello${FLAGGED}`, proc: flagged.h2Hello, load: h2loadRls(BENCH_KEY, "203.0.113.7"), perRequest: 1, bare: true },
            { name: "Sluice gRPC ShouldRateLimit", proc: sluice, load: h2loadRls(BENCH_KEY, "203.0.113.7"), perRequest: 1, sluice: true },
            { name: "Sluice gRPC deny path", proc: sluice, load: h2loadRls(BENCH_DENY_KEY, "192.0.2.1"), perRequest: 1, sluice: true },
            // An imported envoyproxy/ratelimit config's descriptor (#24): their fixed window, one ENVOY_COUNT script call.
            { name: "Sluice gRPC Envoy domain", proc: sluice, load: h2loadRls(BENCH_KEY, "203.0.113.7", { BENCH_ENVOY_DOMAIN }), perRequest: 1, sluice: true },
          ]
        : []),
    ];
    const chosen = ONLY.length === 0 ? allTargets : allTargets.filter((t) => ONLY.some((o) => t.name.toLowerCase().includes(o)));
    // The chosen targets' servers, started side by side.
    const targets: Target[] = await Promise.all(chosen.map(async (t) => ({ ...t, proc: await t.proc() })));
    // Warm-up: JIT, scripts loaded, key caches, the deny address over its limit.
    // One second each: the servers are shared by several targets, and the whole run must stay
    // within about ten minutes.
    for (const t of targets) await measure(t, 1).catch((e: unknown) => process.stderr.write(`warm-up ${t.name}: ${String(e)}\n`));
    const samples = new Map<string, Sample[]>(targets.map((t) => [t.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
      for (const t of order) {
        const s = await measure(t);
        samples.get(t.name)!.push(s);
        process.stdout.write(
          `round ${round + 1} ${t.name.padEnd(32)} ${s.decisionsPerSec.toFixed(0).padStart(8)} dec/s  server ${s.serverUs.toFixed(1)} µs  redis ${s.redisUs.toFixed(1)} µs  p99 ${s.p99Ms.toFixed(1)} ms${s.missRate !== null ? `  budget misses ${(s.missRate * 100).toFixed(3)}%` : ""}${s.errors ? `  errors ${s.errors}` : ""}${s.held ? "" : "  RATE NOT HELD"}  (load ${load()})\n`,
        );
      }
    }
    const row = (name: string) => {
      const xs = samples.get(name)!;
      const m = (f: (s: Sample) => number) => median(xs.map(f));
      return {
        req: m((s) => s.reqPerSec),
        dec: m((s) => s.decisionsPerSec),
        p99: m((s) => s.p99Ms),
        server: m((s) => s.serverUs),
        redis: m((s) => s.redisUs),
        miss: xs[0]!.missRate === null ? null : m((s) => s.missRate!),
        held: xs.every((s) => s.held),
      };
    };
    process.stdout.write(
      `\n${startedAt.toISOString()}: wrk -t1 -c${CONNECTIONS}, ${SECONDS} s per run, medians of ${ROUNDS} interleaved rounds; load average (1, 5, 15 min) ${startLoad} at the start, ${load()} at the end\n\n`,
    );
    process.stdout.write("| target | req/s | decisions/s | p99 ms | server CPU µs / decision | Redis CPU µs / decision |\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (const t of targets) {
      const r = row(t.name);
      const miss = r.miss === null ? "" : ` (budget misses ${(r.miss * 100).toFixed(3)}%)`;
      const held = t.load.tool === "fixed-rate" && !r.held ? " (rate not held)" : "";
      process.stdout.write(`| ${t.name}${held} | ${r.req.toFixed(0)} | ${r.dec.toFixed(0)} | ${r.p99.toFixed(1)} | ${r.server.toFixed(1)}${miss} | ${t.bare ? "—" : r.redis.toFixed(1)} |\n`);
    }
    if (chosen !== allTargets) return;

    const hello1 = row("node:http hello");
    const peer1 = row("rate-limiter-flexible");
    const lean1 = row("lean node:http + ioredis");
    const single = row("Sluice /v1/check");
    const deny = row("Sluice deny path");
    const batch = row("Sluice batch of 100");
    const demo = row("Sluice demo policy (4 counters)");
    const helloFixed = row(`hello at ${FIXED_RATE / 1000}k req/s`);
    const sluiceFixed = row(`Sluice at ${FIXED_RATE / 1000}k req/s`);


    const cost = (r: typeof single) => r.server + r.redis;
    // req/s on a loaded machine measures the scheduler as much as the server: the same ratios from
    // CPU per decision (server + Redis), which hold under load, are printed beside them.
    const byCpu = (other: typeof single, mine: typeof single) => `${(cost(other) / cost(mine)).toFixed(2)}× by CPU`;
    /** The same ratio against the baseline's twin with Sluice's Node flags: like for like. */
    const likeForLike = (baseline: string, mine: typeof single) => {
      const twin = row(`${baseline}${FLAGGED}`);
      return `; like for like ${(mine.dec / twin.dec).toFixed(2)}× (${byCpu(twin, mine)})`;
    };
    /** Against a bare server (no Redis): decisions/s, and the server's CPU alone. */
    const byServer = (bare: typeof single, mine: typeof single) => `${(mine.dec / bare.dec).toFixed(2)}× (${(bare.server / mine.server).toFixed(2)}× by server CPU)`;
    const grpc = HAS_H2LOAD ? row("Sluice gRPC ShouldRateLimit") : null;
    const h2Hello = HAS_H2LOAD ? row("node:http2 gRPC hello") : null;
    const goals: [string, string, boolean][] = [
      ["single check ≥ 1.4× rate-limiter-flexible (decisions/s)", `${(single.dec / peer1.dec).toFixed(2)}× (${byCpu(peer1, single)})${likeForLike("rate-limiter-flexible", single)}`, single.dec >= 1.4 * peer1.dec],
      ["single check ≥ 0.9× the lean ceiling (decisions/s)", `${(single.dec / lean1.dec).toFixed(2)}× (${byCpu(lean1, single)})${likeForLike("lean node:http + ioredis", single)}`, single.dec >= 0.9 * lean1.dec],
      ["≤ 22 µs decision-server CPU per decision", `${single.server.toFixed(1)} µs (lean ${lean1.server.toFixed(1)}, hello ${hello1.server.toFixed(1)})`, single.server <= 22],
      ["≤ 8 µs Redis CPU per decision", `${single.redis.toFixed(1)} µs (lean ${lean1.redis.toFixed(1)})`, single.redis <= 8],
      ["deny path ≥ 0.8× hello (req/s)", `${(deny.req / hello1.req).toFixed(2)}× (${byCpu(hello1, deny)})${likeForLike("node:http hello", deny)}`, deny.req >= 0.8 * hello1.req],
      ...(grpc && h2Hello
        ? [["gRPC ShouldRateLimit ≥ 0.75× node:http2 gRPC hello (decisions/s, #27)", `${byServer(h2Hello, grpc)}; like for like ${byServer(row(`node:http2 gRPC hello${FLAGGED}`), grpc)}`, grpc.dec >= 0.75 * h2Hello.dec] as [string, string, boolean]]
        : []),
      ["batch of 100 ≥ 5× the single check's decisions/s", `${(batch.dec / single.dec).toFixed(1)}× (${byCpu(single, batch)}: ${batch.server.toFixed(1)} + ${batch.redis.toFixed(1)} µs per decision)`, batch.dec >= 5 * single.dec],
      ["a 4-counter decision costs ≤ 1.5× a 1-counter one (server + Redis CPU)", `${(cost(demo) / cost(single)).toFixed(2)}× (${cost(demo).toFixed(1)} vs ${cost(single).toFixed(1)} µs)`, cost(demo) <= 1.5 * cost(single)],
      [
        `p99 at a fixed ${FIXED_RATE / 1000}k req/s ≤ 2× hello's`,
        `${sluiceFixed.p99.toFixed(1)} ms vs ${helloFixed.p99.toFixed(1)} ms: ${(sluiceFixed.p99 / helloFixed.p99).toFixed(2)}×${sluiceFixed.held && helloFixed.held ? "" : " (rate not held)"}`,
        sluiceFixed.held && helloFixed.held && sluiceFixed.p99 <= 2 * helloFixed.p99,
      ],
    ];
    process.stdout.write("\n| goal (#12, #27) | measured | |\n| --- | --- | --- |\n");
    for (const [goal, measured, met] of goals) process.stdout.write(`| ${goal} | ${measured} | ${met ? "met" : "**missed**"} |\n`);
    process.stdout.write(`\nThe accuracy meter (#16), ${meterCost(row("Sluice, every subject sampled"), row("Sluice, accuracy meter off"))}\n`);
    const vsHttp = (grpc: typeof single, http: typeof single) =>
      `${(grpc.dec / http.dec).toFixed(2)}× its decisions/s, ${(grpc.server / http.server).toFixed(2)}× its server CPU per decision`;
    process.stdout.write(
      HAS_H2LOAD
        ? `gRPC (#13; goal: at least the HTTP path's figures): single check ${vsHttp(row("Sluice gRPC ShouldRateLimit"), single)}; deny path ${vsHttp(row("Sluice gRPC deny path"), deny)}; the transports bare: node:http2 gRPC hello ${vsHttp(row("node:http2 gRPC hello"), hello1)} of node:http hello\n` +
            `Envoy domain (#24; goal: no slower than one Sluice check over gRPC): ${vsHttp(row("Sluice gRPC Envoy domain"), row("Sluice gRPC ShouldRateLimit"))} of Sluice's own gRPC row\n`
        : "gRPC (#13): not measured, h2load is not installed (apt-get install nghttp2-client)\n",
    );
    if (PROCESSES > 1) {
      const m = row(`Sluice /v1/check, ${PROCESSES} processes`);
      process.stdout.write(`${PROCESSES} decision processes (#12 item 2): ${(m.dec / single.dec).toFixed(2)}× one process's decisions/s, ${(m.server / single.server).toFixed(2)}× its server CPU per decision (supervisor included)\n`);
    }
  } finally {
    for (const p of procs) p.child.kill("SIGTERM");
    await Promise.all(redises.map((r) => r.stop()));
  }
}

/** What the accuracy meter's exact log adds per sampled decision, against the meter off. */
function meterCost(all: { server: number; redis: number }, off: { server: number; redis: number }): string {
  const sign = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(1)}`;
  return `meter cost per sampled decision: ${sign(all.server - off.server)} µs server CPU, ${sign(all.redis - off.redis)} µs Redis CPU vs meter off`;
}

runBench(main);
