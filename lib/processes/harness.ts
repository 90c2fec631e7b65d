/**
 * Test and benchmark support: spawn real decision server processes (throwaway redis-servers are
 * lib/processes/redis-server.ts). Not used on the decision path.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { childEnv } from "../env";
import { freePort } from "../net/ports";
import { DECISION_NODE_FLAGS } from "../decision/process-flags";

const ROOT = path.resolve(import.meta.dirname, "../..");
/** Every child this process spawned, killed on exit so a crashed or timed-out test leaks nothing. */
const children = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
});

/**
 * Polls `cond` every 50 ms until it holds; past `timeoutMs` throws naming `what`. An error thrown by
 * `cond` ends the wait with that error (a process that died is not waited for).
 */
export async function until(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await cond())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The int tests' global setup (test/global-setup.ts) bundles these entries once per run, as
 * `npm run build` does, into SLUICE_TEST_BUNDLE_DIR: a process then starts on plain node in about a
 * third of the time tsx's loader takes (it transforms every module at each start). Elsewhere (the
 * benchmarks, Playwright, a script) they run from source under tsx. scripts/build.test.ts holds
 * this table to the build's entries.
 */
export const BUNDLED_ENTRIES: Readonly<Record<string, string>> = {
  "worker/decision-server.ts": "decision-server.js",
  "worker/jobs.ts": "worker.js",
  "worker/cli.ts": "sluice.js",
};

/** Node's arguments that run `entry` (a path from the root): the run's bundle when there is one, else the source under tsx. */
export function entryArgs(entry: string, bundleDir = childEnv().SLUICE_TEST_BUNDLE_DIR): string[] {
  const bundled = BUNDLED_ENTRIES[entry];
  return bundleDir && bundled ? [path.join(bundleDir, bundled)] : ["--import", "tsx", path.join(ROOT, entry)];
}

/** A node process of this repository (node itself, not the tsx CLI, so a signal reaches the process), its output collected. */
interface SpawnedProcess {
  child: ChildProcess;
  output: () => string;
  /** Sends a signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Spawns `node [preload…] <entry>` (bundled, or under tsx: entryArgs) with `env`, waits until `started(output)` says it is
 * up (throwing `what exited` if it dies first), and SIGKILLs it when it does not come up in 90 s.
 */
async function spawnProcess(entry: string, env: NodeJS.ProcessEnv, preload: string[], what: string, started: (output: string) => Promise<boolean> | boolean): Promise<SpawnedProcess> {
  let out = "";
  const child = spawn(process.execPath, [...preload, ...entryArgs(entry, env.SLUICE_TEST_BUNDLE_DIR)], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  children.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  try {
    await until(
      what,
      async () => {
        if (child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode}: ${out}`);
        return started(out);
      },
      90_000,
    );
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  return {
    child,
    output: () => out,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode === null && child.pid !== undefined) child.kill(signal);
      return exited;
    },
  };
}

export interface SpawnedServer extends SpawnedProcess {
  url: string;
  port: number;
  /** The gRPC rate limit service's `127.0.0.1:<port>` (SLUICE_GRPC_PORT, a free port unless the test sets it; "" when 0). */
  grpcAddress: string;
}

export interface SpawnOptions {
  waitReady?: boolean;
  /** Milliseconds this server's clock is ahead (negative: behind), for clock-skew tests (testing/skewed-clock.mjs). */
  clockSkewMs?: number;
}

export async function spawnDecisionServer(env: Record<string, string>, options: SpawnOptions = {}): Promise<SpawnedServer> {
  const port = await freePort();
  let grpcPort = await freePort();
  while (grpcPort === port) grpcPort = await freePort();
  const grpcPortSetting = env.SLUICE_GRPC_PORT ?? String(grpcPort);
  const skew = options.clockSkewMs ? ["--import", `${pathToFileURL(path.join(ROOT, "lib/decision/testing/skewed-clock.mjs")).href}?skewMs=${options.clockSkewMs}`] : [];
  const url = `http://127.0.0.1:${port}`;
  // The product's defaults (the 25 ms store budget included) unless a test sets its own: a test
  // server with a longer budget would hide exactly what a loaded machine does to the budget.
  // Every server serves gRPC on a port of its own (the default 8081 would collide between tests).
  // One decision process per server unless a test is about several (SLUICE_DECISION_PROCESSES).
  const serverEnv = childEnv({
    DECISION_HOST: "127.0.0.1",
    DECISION_PORT: String(port),
    SLUICE_DECISION_PROCESSES: "1",
    ...env,
    SLUICE_GRPC_PORT: grpcPortSetting,
  });
  const spawned = await spawnProcess("worker/decision-server.ts", serverEnv, [...DECISION_NODE_FLAGS, ...skew], `decision server on :${port}`, async () => {
    const res = await fetch(`${url}${options.waitReady ? "/readyz" : "/healthz"}`).catch(() => null); // not listening yet
    return res?.status === 200;
  });
  return { ...spawned, url, port, grpcAddress: grpcPortSetting === "0" ? "" : `127.0.0.1:${grpcPortSetting}` };
}

export type SpawnedWorker = SpawnedProcess;

/** A real `npm run worker` process (worker/jobs.ts) with `env`; resolves once it logged its start. */
export function spawnWorker(env: Record<string, string>): Promise<SpawnedWorker> {
  return spawnProcess("worker/jobs.ts", childEnv(env), [], "worker", (out) => out.includes("worker started"));
}
