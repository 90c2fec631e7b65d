/**
 * Throwaway `redis-server` processes (from PATH): the demo's default Redis, and the own servers of
 * tests and benchmarks that must not disturb the shared one (SCRIPT FLUSH, a kill, a cluster).
 * No persistence; every process this module spawned is killed when this process exits.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "../net/ports";

/** The command line of a throwaway server: loopback only, nothing saved, files in `dir`. */
export function redisServerArgs(port: number, dir: string, extra: readonly string[] = []): string[] {
  return ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...extra];
}

function pingOnce(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once("error", () => done(false));
    socket.once("data", (d: Buffer) => done(d.toString().startsWith("+PONG")));
    socket.connect(port, "127.0.0.1", () => socket.write("PING\r\n"));
  });
}

/** Resolves once the server on `port` answers PING; throws after `timeoutMs`. */
export async function waitForRedis(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pingOnce(port))) {
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const spawned = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

/** Spawns a throwaway server (output ignored); the caller waits for it with waitForRedis. */
export function spawnRedisServer(port: number, dir: string, extra: readonly string[] = []): ChildProcess {
  const child = spawn("redis-server", redisServerArgs(port, dir, extra), { stdio: "ignore" });
  child.on("error", () => undefined);
  spawned.add(child);
  child.once("exit", () => spawned.delete(child));
  return child;
}

/** Stops a child: SIGTERM, then SIGKILL after 3 s. */
export async function stopRedisProcess(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.kill(signal);
    setTimeout(() => {
      child.kill("SIGKILL");
      resolve();
    }, 3_000).unref();
  });
}

export interface OwnRedis {
  port: number;
  url: string;
  pid(): number | undefined;
  /** Kills the server at once (SIGKILL): Redis "crashes". start() brings it back on the same port, empty. */
  kill(): Promise<void>;
  start(): Promise<void>;
  /** Stops it for good and removes its directory. */
  stop(): Promise<void>;
}

/** A throwaway redis-server on a free port, in a temporary directory; restartable on the same port. */
export async function startOwnRedis(): Promise<OwnRedis> {
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-redis-"));
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawnRedisServer(port, dir);
    await waitForRedis(port);
  };
  const kill = async () => {
    if (child) await stopRedisProcess(child, "SIGKILL");
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    pid: () => child?.pid,
    kill,
    start,
    async stop() {
      if (child) await stopRedisProcess(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
