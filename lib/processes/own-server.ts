/**
 * Throwaway servers (startOwnRedis, startOwnNats): one on a free port with a temporary directory of
 * its own, that a test can kill and start again on the same port and directory. Every process
 * spawned here is killed when this process exits.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "../net/ports";

/** How a server shows it is up: a new connection reads `startsWith` first, after sending `send` if set. */
export interface Greeting {
  send?: string;
  startsWith: string;
}

function greetedOnce(port: number, greeting: Greeting): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once("error", () => done(false));
    socket.once("data", (d: Buffer) => done(d.toString().startsWith(greeting.startsWith)));
    socket.connect(port, "127.0.0.1", () => {
      if (greeting.send !== undefined) socket.write(greeting.send);
    });
  });
}

/** Resolves once the server on `port` greets; throws after `timeoutMs`. */
export async function waitForGreeting(port: number, greeting: Greeting, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await greetedOnce(port, greeting))) {
    if (Date.now() > deadline) throw new Error(`the server on port ${port} did not answer ${greeting.startsWith}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const spawned = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

/** Spawns a server (output ignored), killed when this process exits; the caller waits for it with waitForGreeting. */
export function spawnOwned(command: string, args: readonly string[]): ChildProcess {
  const child = spawn(command, args, { stdio: "ignore" });
  child.on("error", () => undefined);
  spawned.add(child);
  child.once("exit", () => spawned.delete(child));
  return child;
}

/** Stops a child: `signal`, then SIGKILL after 3 s. */
export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
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

export interface OwnServer {
  port: number;
  /** `<name>://127.0.0.1:<port>` */
  url: string;
  pid(): number | undefined;
  /** Kills the server at once (SIGKILL). start() brings it back on the same port and directory. */
  kill(): Promise<void>;
  start(): Promise<void>;
  /** Stops it for good and removes its directory. */
  stop(): Promise<void>;
}

export interface OwnServerSpec {
  /** The URL scheme, and the temporary directory's name (sluice-<name>-…). */
  name: string;
  /** Starts the server on `port` with its files in `dir` (spawnOwned). */
  spawn(port: number, dir: string): ChildProcess;
  greeting: Greeting;
}

/** A server started by `spec.spawn` on a free port, in a temporary directory; resolves once it greets. */
export async function startOwnServer(spec: OwnServerSpec): Promise<OwnServer> {
  const dir = mkdtempSync(path.join(tmpdir(), `sluice-${spec.name}-`));
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spec.spawn(port, dir);
    await waitForGreeting(port, spec.greeting);
  };
  await start();
  return {
    port,
    url: `${spec.name}://127.0.0.1:${port}`,
    pid: () => child?.pid,
    async kill() {
      if (child) await stopProcess(child, "SIGKILL");
    },
    start,
    async stop() {
      if (child) await stopProcess(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
