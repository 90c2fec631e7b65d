/**
 * `npm run bench:profile`: where one decision's microseconds go. Starts the decision server under
 * `node --cpu-prof` (product defaults, its own redis-server, the bench policy of
 * bench/bench-policy.ts), loads it with `wrk -t1 -c50` (bench/wrk/check.lua) for PROFILE_SECONDS
 * (default 8) on PROFILE_PATH (`single`, the default: one check per request over 100k addresses;
 * `deny`: one hot address far over its limit; `batch`: 100 checks per request; `demo`: four
 * counters per request; `grpc`: ShouldRateLimit calls from h2load, bench/h2load-rls.ts), stops
 * it, and prints the profile's self time per function and its inclusive time per function (the `.cpuprofile` stays in PROFILE_DIR, default a temp directory,
 * for Chrome DevTools), with the server's and Redis's CPU per decision over the run. PROFILE_WARM=demo,grpc
 * loads other paths first, so that the profiled path runs on a server that has answered them (their samples are in the profile too).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { DECISION_NODE_FLAGS } from "../lib/decision/process-flags";
import { freePort } from "../lib/net/ports";
import { startOwnRedis } from "../lib/processes/redis-server";
import { BENCH_DEMO_KEY, BENCH_DENY_KEY, BENCH_KEY, BENCH_TOKEN, publishBenchPolicy } from "./bench-policy";
import { h2loadRlsLoad, wrkLoad } from "./loads";
import { cpuUs } from "./proc-cpu";

const ROOT = path.resolve(import.meta.dirname, "..");
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 8);
const PATH = process.env.PROFILE_PATH ?? "single";
const TOP = Number(process.env.PROFILE_TOP ?? 35);
/**
 * PROFILE_WARM=demo,grpc…: other paths loaded first (3 s each, before the warm-up): the profiled path then runs on a server that
 * has answered them, as a shared one does. The profile covers the process's whole life, so their samples are in it too: compare a
 * function's share with a run without PROFILE_WARM, or raise PROFILE_SECONDS to dilute them.
 */
const WARM = (process.env.PROFILE_WARM ?? "").split(",").filter((w) => w !== "");

/** Each path's load: the environment its wrk script (or h2load, for grpc) reads. */
const LOAD_ENV: Record<string, Record<string, string>> = {
  single: { BENCH_KEY },
  deny: { BENCH_KEY: BENCH_DENY_KEY, BENCH_FIXED_IP: "192.0.2.1" },
  batch: { BENCH_KEY, BENCH_BATCH: "100" },
  demo: { BENCH_KEY: BENCH_DEMO_KEY },
  // Envoy's rate limit service (#13) over gRPC: h2load (bench/h2load-rls.ts), one address.
  grpc: { BENCH_KEY, BENCH_FIXED_IP: "203.0.113.7" },
};

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self and inclusive time per function (name, file, line), as shares of all samples. */
export function summarizeProfile(profile: CpuProfile, top: number): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const timeOf = new Map<number, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    timeOf.set(id, (timeOf.get(id) ?? 0) + dt);
    total += dt;
  });
  const label = (n: ProfileNode) => {
    const file = n.callFrame.url.replace(/^file:\/\//, "").replace(`${ROOT}/`, "").replace(/.*node_modules\//, "");
    return `${n.callFrame.functionName || "(anonymous)"} ${file ? `${file}:${n.callFrame.lineNumber + 1}` : ""}`.trim();
  };
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, t] of timeOf) {
    const k = label(byId.get(id)!);
    self.set(k, (self.get(k) ?? 0) + t);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const name = label(byId.get(cur)!);
      if (seen.has(name)) continue;
      seen.add(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + t);
    }
  }
  const rows = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, t]) => `${((100 * t) / total).toFixed(1).padStart(5)}%  ${k}`)
      .join("\n");
  return `self time (top ${top}):\n${rows(self)}\n\ninclusive time (top ${top}):\n${rows(inclusive)}\n`;
}

/** INFO commandstats: calls and µs per command (the script's own commands count under the script). */
function parseCommandStats(info: string): Map<string, { calls: number; usec: number }> {
  const out = new Map<string, { calls: number; usec: number }>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) out.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  return out;
}

function redisCalls(stats: Map<string, { calls: number; usec: number }>, decisions: number): string {
  const rows = [...stats].filter(([, s]) => s.calls > 0).sort((a, b) => b[1].usec - a[1].usec);
  return rows
    .map(([name, s]) => `redis ${name}: ${s.calls} calls (${(decisions / s.calls).toFixed(1)} decisions each), ${(s.usec / s.calls).toFixed(1)} µs per call, ${(s.usec / decisions).toFixed(2)} µs per decision`)
    .join("\n");
}

async function main(): Promise<void> {
  const loadEnv = LOAD_ENV[PATH];
  if (!loadEnv) throw new Error(`PROFILE_PATH: one of ${Object.keys(LOAD_ENV).join(", ")}`);
  const dir = process.env.PROFILE_DIR ?? mkdtempSync(path.join(tmpdir(), "sluice-profile-"));
  const prefix = `prof${process.pid}:`;
  const own = await startOwnRedis();
  const redis = new Redis(own.url);
  let child: ChildProcess | null = null;
  try {
    process.env.SLUICE_REDIS_PREFIX = prefix;
    await publishBenchPolicy(redis);
    const port = await freePort();
    const grpcPort = PATH === "grpc" || WARM.includes("grpc") ? await freePort() : 0;
    child = spawn(process.execPath, [...DECISION_NODE_FLAGS, "--cpu-prof", `--cpu-prof-dir=${dir}`, "--import", "tsx", path.join(ROOT, "worker/decision-server.ts")], {
      cwd: ROOT,
      env: { ...process.env, REDIS_URL: own.url, SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: BENCH_TOKEN, DECISION_PORT: String(port), DECISION_HOST: "127.0.0.1", SLUICE_GRPC_PORT: String(grpcPort), SLUICE_DECISION_PROCESSES: process.env.SLUICE_DECISION_PROCESSES ?? "1" },
      stdio: ["ignore", "ignore", "inherit"],
    });
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      if (i > 600 || child.exitCode !== null) throw new Error("the decision server did not start");
      if (await fetch(`${url}/readyz`).then((r) => r.ok, () => false)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const load = (seconds: number, path = PATH) =>
      path === "grpc"
        ? h2loadRlsLoad(`127.0.0.1:${grpcPort}`, `${url}/metrics`, seconds, 50, { ...process.env, BENCH_TOKEN, ...LOAD_ENV[path] })
        : wrkLoad(`${url}/v1/check`, seconds, 50, { ...process.env, BENCH_TOKEN, ...LOAD_ENV[path] });
    for (const w of WARM) {
      if (!LOAD_ENV[w]) throw new Error(`PROFILE_WARM: one of ${Object.keys(LOAD_ENV).join(", ")}`);
      await load(3, w);
    }
    await load(2); // warm-up: JIT, scripts loaded, the deny address over its limit
    await redis.config("RESETSTAT");
    const server0 = cpuUs(child.pid!);
    const redis0 = cpuUs(own.pid()!);
    const stdout = await load(SECONDS);
    const serverUs = cpuUs(child.pid!) - server0;
    const redisUs = cpuUs(own.pid()!) - redis0;
    const line = stdout.split("\n").find((l) => l.startsWith("RESULT "));
    if (!line) throw new Error(`the load printed no RESULT: ${stdout}`);
    const requests = Number(line.split(" ")[1]);
    const decisions = requests * (PATH === "batch" ? 100 : 1);
    const stats = parseCommandStats(await redis.info("commandstats"));
    const exited = new Promise((r) => child!.once("exit", r));
    child.kill("SIGTERM");
    await exited;
    // One profile per thread (tsx's loader runs in a worker): the main thread's is the largest.
    const file = readdirSync(dir)
      .filter((f) => f.endsWith(".cpuprofile"))
      .sort((a, b) => statSync(path.join(dir, b)).size - statSync(path.join(dir, a)).size)[0];
    if (!file) throw new Error(`no .cpuprofile in ${dir}`);
    const profile = JSON.parse(readFileSync(path.join(dir, file), "utf8")) as CpuProfile;
    process.stdout.write(
      `${PATH}: ${(requests / SECONDS).toFixed(0)} req/s, server ${(serverUs / decisions).toFixed(1)} µs and Redis ${(redisUs / decisions).toFixed(1)} µs CPU per decision (profiler on: the server's figure is inflated)\n${redisCalls(stats, decisions)}\nprofile: ${path.join(dir, file)}\n\n`,
    );
    process.stdout.write(summarizeProfile(profile, TOP));
  } finally {
    if (child && child.exitCode === null) child.kill("SIGKILL");
    redis.disconnect();
    await own.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`profile failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
