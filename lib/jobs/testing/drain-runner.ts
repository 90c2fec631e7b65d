/**
 * Runs lib/jobs/testing/drain-child.ts for the crash tests (rollup, billing), optionally SIGKILLing
 * it a given time after it starts its work (not after its startup: a fast machine drains in well
 * under a second, and a kill during startup tests nothing).
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { childEnv } from "../../env";

const ROOT = path.resolve(import.meta.dirname, "../../..");

/** What drain-child writes to stderr when its work begins. */
export const DRAIN_START_MARKER = "sluice-drain-start";

export function runDrainChild(env: Record<string, string>, killAfterMs: number | null): Promise<{ code: number | null; signal: string | null; out: string }> {
  return new Promise((resolve, reject) => {
    // node itself (not the tsx wrapper), so SIGKILL reaches the process doing the work.
    const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "lib/jobs/testing/drain-child.ts")], {
      cwd: ROOT,
      env: childEnv(env),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    let timer: NodeJS.Timeout | null = null;
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
      if (killAfterMs !== null && timer === null && err.includes(DRAIN_START_MARKER)) {
        timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
      }
    });
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      if (timer) clearTimeout(timer);
      if (code !== 0 && signal === null) reject(new Error(`drain child failed (${code}): ${err}`));
      else resolve({ code, signal, out });
    });
  });
}
