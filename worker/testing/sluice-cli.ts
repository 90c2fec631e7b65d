/**
 * `sluice` (worker/cli.ts; the int run's bundle of it when there is one, lib/processes/harness.ts
 * entryArgs) run as a process, as an operator runs it, for the CLI's tests: the
 * environment given on top of this one, its exit code, stdout and stderr. Never throws for a
 * failing command: a non-zero exit is an answer to assert on.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { entryArgs } from "../../lib/processes/harness";

const ROOT = path.resolve(import.meta.dirname, "../..");

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export function runSluice(env: Record<string, string>, args: readonly string[], options: { timeoutMs?: number } = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...entryArgs("worker/cli.ts"), ...args],
      { cwd: ROOT, env: { ...process.env, NODE_NO_WARNINGS: "1", ...env }, timeout: options.timeoutMs ?? 150_000, maxBuffer: 32 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}
