/**
 * How `sluice` finds a running `npm run demo`: the demo writes where its database and Redis are to
 * `<SLUICE_DATA_DIR>/demo.env` (default `.data/demo.env`) with its process id, and removes the file
 * when it stops. The CLI, given no DATABASE_URL, reads it while that process is alive — so
 * `npx sluice certify` after `npm run demo` talks to the demo's embedded database instead of
 * failing with "DATABASE_URL is not set".
 */
import fs from "node:fs";
import path from "node:path";

export const DEMO_ENV_FILE = "demo.env";
const VARS = ["DATABASE_URL", "REDIS_URL", "SLUICE_MODE"] as const;
type DemoVars = Partial<Record<(typeof VARS)[number], string>>;

export function demoEnvPath(dataDir: string): string {
  return path.join(dataDir, DEMO_ENV_FILE);
}

export function writeDemoEnv(dataDir: string, vars: DemoVars, pid: number = process.pid): void {
  const lines = [`# written by npm run demo (pid ${pid}); removed when it stops. sluice reads it when DATABASE_URL is unset.`, `SLUICE_DEMO_PID=${pid}`];
  for (const name of VARS) if (vars[name]) lines.push(`${name}=${vars[name]}`);
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(demoEnvPath(dataDir), `${lines.join("\n")}\n`, { mode: 0o600 });
}

export function removeDemoEnv(dataDir: string): void {
  fs.rmSync(demoEnvPath(dataDir), { force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, owned by someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Fills DATABASE_URL (and REDIS_URL, SLUICE_MODE where unset) from a running demo's file. Returns
 * the file it used, or null: DATABASE_URL already set, no file, or its demo no longer running.
 */
export function loadDemoEnv(
  dataDir: string,
  // Written, not read: the demo's values become this process's environment, so every reader
  // through lib/env.ts sees them.
  // eslint-disable-next-line no-restricted-syntax
  env: Record<string, string | undefined> = process.env,
): string | null {
  if (env.DATABASE_URL) return null;
  const file = demoEnvPath(dataDir);
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
  const values = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) values.set(m[1]!, m[2]!);
  }
  const pid = Number(values.get("SLUICE_DEMO_PID"));
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid) || !values.get("DATABASE_URL")) return null;
  for (const name of VARS) {
    const value = values.get(name);
    if (value && !env[name]) env[name] = value;
  }
  return file;
}
