/**
 * Test and benchmark support: spawn real decision server processes (throwaway redis-servers are
 * lib/net/redis-server.ts). Not used on the decision path.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { childEnv } from "../env";
import { freePort } from "../net/ports";

const ROOT = path.resolve(import.meta.dirname, "../..");
/** Every child this process spawned, killed on exit so a crashed or timed-out test leaks nothing. */
const children = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
});

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export interface SpawnedServer {
  url: string;
  port: number;
  /** The gRPC rate limit service's `127.0.0.1:<port>` (SLUICE_GRPC_PORT, a free port unless the test sets it; "" when 0). */
  grpcAddress: string;
  child: ChildProcess;
  output: () => string;
  /** Sends a signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
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
  let out = "";
  // One process (node with tsx's loader), not the tsx CLI: a signal reaches the server itself.
  const skew = options.clockSkewMs ? ["--import", `${pathToFileURL(path.join(ROOT, "lib/decision/testing/skewed-clock.mjs")).href}?skewMs=${options.clockSkewMs}`] : [];
  const child = spawn(process.execPath, [...skew, "--import", "tsx", path.join(ROOT, "worker/decision-server.ts")], {
    cwd: ROOT,
    // The product's defaults (the 25 ms store budget included) unless a test sets its own: a test
    // server with a longer budget would hide exactly what a loaded machine does to the budget.
    // Every server serves gRPC on a port of its own (the default 8081 would collide between tests).
    // One decision process per server unless a test is about several (SLUICE_DECISION_PROCESSES).
    env: childEnv({
      DECISION_HOST: "127.0.0.1",
      DECISION_PORT: String(port),
      SLUICE_DECISION_PROCESSES: "1",
      ...env,
      SLUICE_GRPC_PORT: grpcPortSetting,
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  children.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`decision server exited: ${out}`);
        const res = await fetch(`${url}${options.waitReady ? "/readyz" : "/healthz"}`);
        return res.status === 200;
      },
      90_000,
      `decision server on :${port}`,
    );
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  return {
    url,
    port,
    grpcAddress: grpcPortSetting === "0" ? "" : `127.0.0.1:${grpcPortSetting}`,
    child,
    output: () => out,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode === null && child.pid !== undefined) child.kill(signal);
      return exited;
    },
  };
}

export interface SpawnedWorker {
  child: ChildProcess;
  output: () => string;
  /** Sends a signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** A real `npm run worker` process (worker/jobs.ts) with `env`; resolves once it logged its start. */
export async function spawnWorker(env: Record<string, string>): Promise<SpawnedWorker> {
  let out = "";
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "worker/jobs.ts")], {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
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
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`worker exited: ${out}`);
        return out.includes("worker started");
      },
      90_000,
      "worker",
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
