/**
 * The loads the benchmarks drive a server with, each printing one `RESULT <requests> <duration µs>
 * <p50 µs> <p99 µs> <errors>` line on stdout: wrk with bench/wrk/check.lua (one check or a batch per
 * request), and h2load on the gRPC rate limit service (bench/h2load-rls.ts). Used by
 * bench/side-by-side.ts (`npm run bench`) and bench/profile.ts (`npm run bench:profile`).
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";

const ROOT = path.resolve(import.meta.dirname, "..");
const run = promisify(execFile);

/** `wrk -t1 -c<connections>` on `url` for `seconds`, with check.lua reading `env` (BENCH_TOKEN, BENCH_KEY, BENCH_BATCH…). */
export async function wrkLoad(url: string, seconds: number, connections: number, env: NodeJS.ProcessEnv): Promise<string> {
  const { stdout } = await run("/usr/bin/wrk", ["-t1", `-c${connections}`, `-d${seconds}s`, "-s", path.join(ROOT, "bench/wrk/check.lua"), url], { env, maxBuffer: 1 << 20 });
  return stdout;
}

/** h2load's ShouldRateLimit calls to the rate limit service at `grpcAddress` (host:port); `metricsUrl` counts the calls not answered OK. */
export async function h2loadRlsLoad(grpcAddress: string, metricsUrl: string, seconds: number, connections: number, env: NodeJS.ProcessEnv): Promise<string> {
  const { stdout } = await run(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/h2load-rls.ts")], {
    cwd: ROOT,
    env: { ...env, RLS_ADDRESS: grpcAddress, METRICS_URL: metricsUrl, SECONDS: String(seconds), CONNECTIONS: String(connections) },
    maxBuffer: 1 << 20,
  });
  return stdout;
}
