/**
 * `sluice certify` end to end: ephemeral redis-server and decision servers, the real scenarios.
 * The demo policy passes (exit 0) and its report is stored with the version; a policy broken on
 * purpose — a fixed window where the requirements forbid a boundary burst, an operation that fails
 * open where they require it to fail closed — fails (exit 1) naming both requirements.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSluice } from "../testing/sluice-cli";
import { freshDatabase, type FreshDatabase } from "@/test/helpers";
import { createDb } from "@/lib/db/client";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { applyPolicyFile } from "@/lib/services/policy/apply-policy-file";
import { publishPolicy } from "@/lib/services/policy/publish-policy";
import type { CertificationReport } from "@/lib/services/certify/report";

const ROOT = path.resolve(import.meta.dirname, "../..");
const DEMO = readFileSync(path.join(ROOT, "examples/demo-policy.yaml"), "utf8");

const BROKEN = {
  version: 1,
  operations: [
    { name: "read", match: ["GET /v1/things"] },
    { name: "pay", match: ["POST /v1/payments"], failureMode: "open" },
  ],
  tiers: [
    {
      name: "basic",
      limits: [
        { operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 20, window: "1s" },
        { operation: "pay", scope: "tenant", algorithm: "sliding_window_log", limit: 10, window: "1s" },
      ],
    },
  ],
  tenants: [{ slug: "shop", name: "Shop", tier: "basic" }],
  requirements: {
    limits: [{ tier: "basic", operation: "*", scope: "api_key", boundaryBurst: "forbidden" }],
    operations: [{ operation: "pay", failureMode: "closed" }],
  },
};

let demo: FreshDatabase;
let broken: FreshDatabase;
let db: PrismaClient;

const sluice = (url: string, ...args: string[]) => runSluice({ DATABASE_URL: url }, args, { timeoutMs: 400_000 });

/**
 * `sluice certify --json`, once more when the first run verified less than all: certify says
 * not_verified (never pass or fail) for a requirement whose answers were degraded, the machine
 * having stalled past the product's 25 ms store budget. A loaded CI machine (the other int worker
 * spawning servers) has done that; the second run is held to the same assertions.
 */
async function certifyJson(url: string, ...args: string[]): Promise<{ r: Awaited<ReturnType<typeof sluice>>; report: CertificationReport & { id: string } }> {
  for (let attempt = 1; ; attempt++) {
    const r = await sluice(url, "certify", "--json", ...args);
    const report = JSON.parse(r.stdout) as CertificationReport & { id: string };
    if (attempt === 1 && report.results.some((x) => x.status === "not_verified")) continue;
    return { r, report };
  }
}

beforeAll(async () => {
  [demo, broken] = await Promise.all([freshDatabase(), freshDatabase()]);
  db = createDb(demo.url);
  await applyPolicyFile(db, DEMO, { actor: "test:certify" });
  await publishPolicy({ db, redis: null }, { actor: "test:certify" });
  const brokenDb = createDb(broken.url);
  await applyPolicyFile(brokenDb, BROKEN, { actor: "test:certify" });
  await publishPolicy({ db: brokenDb, redis: null }, { actor: "test:certify" });
  await brokenDb.$disconnect();
});
afterAll(async () => {
  await db?.$disconnect();
  await demo?.drop();
  await broken?.drop();
});

describe("sluice certify", () => {
  it("passes on the demo policy: exit 0, progress on the terminal, the report stored with the version", async () => {
    const { r, report } = await certifyJson(demo.url);
    const failing = report.results.filter((x) => x.status !== "pass");
    expect(failing, JSON.stringify(failing, null, 1)).toEqual([]);
    expect(r.code).toBe(0);
    expect(report).toMatchObject({ version: 1, passed: true, mode: "ephemeral", instances: 2 });
    // every kind of requirement was exercised
    expect(new Set(report.results.map((x) => x.requirement))).toEqual(
      new Set(["boundary", "boundaryBurst", "underLimit", "accuracy", "instances", "retryAfter", "rejectP95", "failureMode"]),
    );
    expect(r.stderr).toMatch(/\[certify +\d+ s\] boundary \(N-th allowed, N\+1-th rejected\): \d+\/\d+ passed/);
    expect(r.stderr).toMatch(/failure modes with Redis down: 8\/8 passed/);
    expect(report.durationMs).toBeLessThan(180_000);
    const stored = await db.certificationReport.findUniqueOrThrow({ where: { id: report.id } });
    expect(stored).toMatchObject({ version: 1, passed: true });
    expect(stored.html).toContain("<h1>Certification of policy v1</h1>");
  }, 420_000);

  it("fails on a policy broken on purpose, exit 1, naming each requirement it breaks and where it is stated", async () => {
    let r = await sluice(broken.url, "certify", "--instances", "1");
    // As certifyJson: once more when the machine stalled and left something not verified.
    if (/, [1-9]\d* not verified/.test(r.stdout)) r = await sluice(broken.url, "certify", "--instances", "1");
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^FAIL {2}boundaryBurst \(burst at a window edge\) — basic-api_key: expected no burst: at most 21 units \(1\.05× the limit\) across an edge, measured 40 units \(2\.00× the limit\); required by requirements\.limits\[0\]$/m);
    expect(r.stdout).toMatch(/^FAIL {2}failureMode \(failure mode when Redis is down\) — pay: expected fails closed, measured declared open; with Redis down: 200, degraded: true; required by requirements\.operations\[0\]$/m);
    // (its fixed window may also miss the accuracy of an exact log at 1.6× the limit: held to it, since bursts are forbidden)
    expect(r.stdout).toMatch(/^Not certified: [23] failed, \d+ passed\. Policy v1: \d+ passed, [23] failed, 0 not verified/m);
    const missing = await sluice(broken.url, "certify", "--version", "7");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("error: policy version 7 does not exist\n");
  }, 420_000);
});
