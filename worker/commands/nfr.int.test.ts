import { readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runSluice } from "../testing/sluice-cli";
import { freshDatabasePerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { applyPolicyFile } from "@/lib/services/policy/apply-policy-file";
import { publishPolicy } from "@/lib/services/policy/publish-policy";

const ROOT = path.resolve(import.meta.dirname, "../..");
const DEMO = readFileSync(path.join(ROOT, "examples/demo-policy.yaml"), "utf8");

const fresh = freshDatabasePerFile();
let db: PrismaClient;

const sluice = (...args: string[]) => runSluice({ DATABASE_URL: fresh.url }, args);

beforeAll(async () => {
  ({ db } = fresh);
  await applyPolicyFile(db, DEMO, { actor: "test:nfr" });
  await publishPolicy({ db, redis: null }, { actor: "test:nfr" });
  // v2: the free tier's per-key limit raised to 150
  await applyPolicyFile(db, DEMO.replace("algorithm: sliding_window_counter, limit: 100, window: 1m", "algorithm: sliding_window_counter, limit: 150, window: 1m"), { actor: "test:nfr" });
  await publishPolicy({ db, redis: null }, { actor: "test:nfr" });
});

describe("sluice nfr", () => {
  it("prints the live demo policy as a markdown table, and --version N an earlier one", async () => {
    const live = await sluice("nfr");
    expect(live.code).toBe(0);
    expect(live.stdout).toMatch(/^# Non-functional requirements — policy v2/);
    expect(live.stdout).toContain("| free |  | * (every operation) | api_key | limit | 150 per 1m |");
    expect(live.stdout).toContain("the 150th request is allowed, the 151st rejected");
    const v1 = await sluice("nfr", "--version", "1");
    expect(v1.stdout).toMatch(/^# Non-functional requirements — policy v1/);
    expect(v1.stdout).toContain("the 100th request is allowed, the 101st rejected");
  }, 300_000);

  it("prints CSV, and refuses a version that does not exist or a format it does not know, naming it", async () => {
    const csv = await sluice("nfr", "--format", "csv");
    expect(csv.code).toBe(0);
    expect(csv.stdout.split("\n")[0]).toMatch(/^tier,tenant,operation,scope,kind,limit,window,algorithm,mode,boundary,edgeBurst,/);
    const missing = await sluice("nfr", "--version", "9");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("error: policy version 9 does not exist\n");
    const format = await sluice("nfr", "--format", "pdf");
    expect(format.code).toBe(1);
    expect(format.stderr).toMatch(/--format <format>' argument 'pdf' is invalid/);
    const version = await sluice("nfr", "--version", "latest");
    expect(version.code).toBe(1);
    expect(version.stderr).toContain('--version: expected a version number ≥ 1, got "latest"');
  }, 300_000);
});
