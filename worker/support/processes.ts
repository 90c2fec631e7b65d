/**
 * Small process supervision for `npm run demo`: start children with prefixed output, stop them
 * all (SIGTERM, then SIGKILL after a grace period) when the demo ends.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { childEnv } from "../../lib/env";

export interface Supervised {
  name: string;
  child: ChildProcess;
}

const children: Supervised[] = [];

/** Starts a child whose output is prefixed with its name; the demo fails if it dies early. */
export function startChild(
  name: string,
  command: string,
  args: string[],
  options: { env?: Record<string, string | undefined>; cwd?: string; quiet?: boolean } = {},
): Supervised {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: childEnv(options.env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const prefix = `[${name}] `;
  const forward = (stream: NodeJS.WritableStream) => (chunk: Buffer) => {
    if (options.quiet) return;
    for (const line of chunk.toString().split("\n")) if (line.trim()) stream.write(prefix + line + "\n");
  };
  child.stdout?.on("data", forward(process.stdout));
  child.stderr?.on("data", forward(process.stderr));
  const supervised = { name, child };
  children.push(supervised);
  return supervised;
}

/** Resolves when `url` answers 2xx (or `accept` says so), rejects after `timeoutMs`. */
export async function waitForHttp(url: string, timeoutMs: number, accept = (status: number) => status < 300): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = "";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url, { redirect: "manual", signal: AbortSignal.timeout(2_000) });
      if (accept(res.status)) return;
      lastError = `HTTP ${res.status}`;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`${url} did not come up within ${timeoutMs} ms (${lastError})`);
}

/** Stops every child started here, newest first. */
export async function stopAll(graceMs = 5_000): Promise<void> {
  const running = children.splice(0).reverse().filter((s) => s.child.exitCode === null && s.child.signalCode === null);
  await Promise.all(
    running.map(
      (s) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(() => s.child.kill("SIGKILL"), graceMs);
          s.child.once("exit", () => {
            clearTimeout(timer);
            resolve();
          });
          s.child.kill("SIGTERM");
        }),
    ),
  );
}
