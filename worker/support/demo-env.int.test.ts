/**
 * `sluice` after `npm run demo`, without DATABASE_URL (#29.8): it reads the running demo's
 * demo.env, here written for this test's database with this (live) process as the demo.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "@/test/helpers";
import { runSluice } from "../testing/sluice-cli";
import { writeDemoEnv } from "./demo-env";

let fresh: FreshDatabase;
let dataDir: string;

beforeAll(async () => {
  fresh = await freshDatabase();
  dataDir = mkdtempSync(path.join(tmpdir(), "sluice-demo-cli-"));
}, 120_000);
afterAll(async () => {
  rmSync(dataDir, { recursive: true, force: true });
  await fresh?.drop();
});

describe("the CLI beside a running demo", () => {
  it("finds the demo's database when DATABASE_URL is unset, and says so", async () => {
    const env = { DATABASE_URL: "", REDIS_URL: "", SLUICE_DATA_DIR: dataDir, SLUICE_REDIS_PREFIX: `${testRedisPrefix()}demoenv:` };
    const before = await runSluice(env, ["versions"]);
    expect(before.code).toBe(1);
    expect(before.stderr).toContain("DATABASE_URL is not set");
    writeDemoEnv(dataDir, { DATABASE_URL: fresh.url, REDIS_URL: testRedisUrl() });
    const r = await runSluice(env, ["versions"]);
    expect(r.stderr).toContain("DATABASE_URL unset: using the running demo's database");
    expect(r.code).toBe(0);
  }, 150_000);
});
