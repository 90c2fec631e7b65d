/**
 * A throwaway `nats-server` with JetStream (Debian's package, /usr/sbin on PATH or not) on a free
 * port with its own storage directory, for tests that cut the link (kill it) and heal it (start it
 * again on the same port and directory: the stream and its durable consumers survive, as on a real
 * server's restart). Every process started here is killed when this process exits.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "../ports";

const BINARY = ["/usr/sbin/nats-server", "/usr/bin/nats-server"].find((p) => existsSync(p)) ?? "nats-server";

const spawned = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

/** Resolves once the server on `port` greets with INFO; throws after `timeoutMs`. */
async function waitForNats(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const once = () =>
    new Promise<boolean>((resolve) => {
      const socket = new Socket();
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(1_000, () => done(false));
      socket.once("error", () => done(false));
      socket.once("data", (d: Buffer) => done(d.toString().startsWith("INFO")));
      socket.connect(port, "127.0.0.1");
    });
  while (!(await once())) {
    if (Date.now() > deadline) throw new Error(`nats-server on port ${port} did not answer`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface OwnNats {
  port: number;
  url: string;
  /** Kills it at once (SIGKILL): the link is cut. start() brings it back on the same port and storage. */
  kill(): Promise<void>;
  start(): Promise<void>;
  /** Stops it for good and removes its storage. */
  stop(): Promise<void>;
}

export async function startOwnNats(): Promise<OwnNats> {
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-nats-"));
  const port = await freePort();
  let child: ChildProcess | null = null;
  const halt = async (signal: NodeJS.Signals) => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once("exit", () => resolve());
      c.kill(signal);
    });
  };
  const start = async () => {
    child = spawn(BINARY, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], { stdio: "ignore" });
    child.on("error", () => undefined);
    spawned.add(child);
    const c = child;
    c.once("exit", () => spawned.delete(c));
    await waitForNats(port);
  };
  await start();
  return {
    port,
    url: `nats://127.0.0.1:${port}`,
    kill: () => halt("SIGKILL"),
    start,
    async stop() {
      await halt("SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
