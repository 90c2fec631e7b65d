import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { demoEnvPath, loadDemoEnv, removeDemoEnv, writeDemoEnv } from "./demo-env";

const dirs: string[] = [];
const dir = () => {
  const d = mkdtempSync(path.join(tmpdir(), "sluice-demo-env-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("the CLI finds a running demo's database (#29.8)", () => {
  it("fills DATABASE_URL, REDIS_URL and SLUICE_MODE from the file of a live demo", () => {
    const d = dir();
    writeDemoEnv(d, { DATABASE_URL: "postgresql://postgres:x@127.0.0.1:54329/sluice", REDIS_URL: "redis://127.0.0.1:6390" });
    const env: Record<string, string | undefined> = {};
    expect(loadDemoEnv(d, env)).toBe(demoEnvPath(d));
    expect(env).toEqual({ DATABASE_URL: "postgresql://postgres:x@127.0.0.1:54329/sluice", REDIS_URL: "redis://127.0.0.1:6390" });
  });

  it("leaves a DATABASE_URL that is set alone, and ignores the file of a demo that stopped", () => {
    const d = dir();
    writeDemoEnv(d, { DATABASE_URL: "postgresql://demo/sluice" });
    const env: Record<string, string | undefined> = { DATABASE_URL: "postgresql://mine/db" };
    expect(loadDemoEnv(d, env)).toBeNull();
    expect(env.DATABASE_URL).toBe("postgresql://mine/db");
    // A pid that cannot be alive (beyond pid_max), as a crashed demo would leave behind.
    writeFileSync(demoEnvPath(d), "SLUICE_DEMO_PID=99999999\nDATABASE_URL=postgresql://gone/sluice\n");
    const empty: Record<string, string | undefined> = {};
    expect(loadDemoEnv(d, empty)).toBeNull();
    expect(empty.DATABASE_URL).toBeUndefined();
    removeDemoEnv(d);
    expect(loadDemoEnv(d, {})).toBeNull();
  });
});
