/**
 * The services behind the Justify and Prove pages, on real PostgreSQL: the draft's replay against
 * the live version on recorded rollup rows (numbers worked out by hand in the comments), the
 * advisor form's validation against the live version, and certification reports read back per
 * version and per requirement.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "@/test/helpers";
import { createDb } from "@/lib/db/client";
import { saveCertificationReport } from "@/lib/db/certify-repo";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { insertRollupRows, rollupRows } from "@/lib/jobs/rollup";
import type { UsageMinute } from "@/lib/redis/usage-format";
import { applyPolicyFile } from "../policy/apply-policy-file";
import { certificationsOf, readCertification } from "./certification-view";
import { formatReportHtml, type CertificationReport, type RequirementResult } from "../certify/report";
import { ServiceError } from "../errors";
import { adviseFromForm, readJustifyContext } from "./justify-context";
import { publishPolicy } from "../policy/publish-policy";
import { replayDraft } from "./replay-draft";
import { DEMO } from "../policy/testing/policy-rows";
import { allowedMinute, JUSTIFY_DRAFT } from "./testing/recorded-usage";

const NOW = Date.UTC(2026, 11, 3, 12, 0, 0);
const MIN = 60_000;
const actor = "test:justify-ui";

let fresh: FreshDatabase;
let db: PrismaClient;

beforeAll(async () => {
  fresh = await freshDatabase();
  db = createDb(fresh.url);
  await applyPolicyFile(db, DEMO, { actor });
  await publishPolicy({ db, redis: null }, { actor });
  await applyPolicyFile(db, JUSTIFY_DRAFT, { actor });
  // One hour, 3 h to 2 h before NOW: globex's key 30 orders-read a minute, acme's 2 a minute.
  const minutes: UsageMinute[] = [];
  for (let m = 0; m < 60; m++) {
    minutes.push(allowedMinute(NOW - 3 * 3_600_000 + m * MIN, [
          { tenant: "globex", tier: "pro", operation: "orders-read", keyPrefix: "91obe0c10000", count: 30 },
          { tenant: "acme", tier: "free", operation: "orders-read", keyPrefix: "acme0c100000", count: 2 },
        ]),
    );
  }
  await db.$transaction(async (tx) => {
    for (const m of minutes) await insertRollupRows(tx, rollupRows(m));
  });
});
afterAll(async () => {
  await db?.$disconnect();
  await fresh?.drop();
});

describe("the draft's replay against the live version", () => {
  it("finds the tier, tenant and key the draft newly limits, and the quota it makes run out, with the day", async () => {
    const r = await replayDraft(db, { days: 7, nowMs: NOW });
    expect(r.requests).toBe(60 * 32);
    expect(r.liveVersion).toBe(1);
    const pro = r.comparison.tiers.find((t) => t.tier === "pro")!;
    // 30 a minute against a sliding 10 a minute: after the first minute, 10 of every 30 pass.
    expect(pro.liveShare).toBe(0);
    expect(pro.draftShare).toBeGreaterThan(0.6);
    expect(pro.draftShare).toBeLessThan(0.7);
    expect(r.comparison.tiers.find((t) => t.tier === "free")).toMatchObject({ liveShare: 0, draftShare: 0 });
    expect(r.comparison.newlyLimitedTenants.map((t) => t.subject)).toEqual(["globex"]);
    expect(r.comparison.newlyLimitedKeys.map((t) => t.subject)).toEqual(["globex/91obe0c10000"]);
    expect(r.comparison.freedTenants).toEqual([]);
    // acme: 120 used this month, projected at its month-to-date rate as the tenant page projects it
    // (lib/policy/quota-projection.ts): 120 in the 2.5 days to 3 December noon = 48 a day. Live 10,000:
    // (10,000 − 120) / 48 = 206 days, not this month. Draft 1,000 (the draft admits all of acme's
    // replayed traffic): 880 / 48 = 18.3 days after noon → 21 December.
    expect(r.quotas.newlyRunningOut).toEqual([{ tenant: "acme", operation: "*", liveRunsOutOn: null, draftRunsOutOn: "2026-12-21" }]);
    expect(r.recorded.find((x) => x.tier === "pro")).toEqual({ tier: "pro", requests: 1800, denied: 0 });
    expect(r.arrivalModel).toContain("evenly over their minute");
  });

  it("refuses days outside 1–30, naming the field", async () => {
    const error = await replayDraft(db, { days: 0, nowMs: NOW }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).field).toBe("days");
  });
});

describe("the advisor page's query", () => {
  it("names a tier or operation the live version does not have", async () => {
    const context = (await readJustifyContext(db))!;
    expect(context.tiers.map((t) => t.name).sort()).toEqual(["enterprise", "free", "pro"]);
    expect(context.globalCaps).toEqual([expect.objectContaining({ operation: "export", limit: 50, windowMs: 60_000, share: "weighted" })]);
    expect((await adviseFromForm(db, context, { tier: "gold" }, NOW)).errors).toEqual([{ field: "tier", message: "no tier named gold in live v1", text: "Tier: no tier named gold in live v1" }]);
    expect((await adviseFromForm(db, context, { tier: "pro", operation: "teleport" }, NOW)).errors).toEqual([{ field: "operation", message: "no operation named teleport in live v1", text: "Operation: no operation named teleport in live v1" }]);
    expect((await adviseFromForm(db, context, { tier: "pro", limit: "-3" }, NOW)).errors).toEqual([{ field: "limit", message: "expected a whole number ≥ 1", text: "Proposed limit: expected a whole number ≥ 1" }]);
    // globex's key peaks at 30 a minute; a limit of 20 a minute denies 10 of its 30 in each of 60 minutes.
    const ok = await adviseFromForm(db, context, { tier: "pro", scope: "api_key", limit: "20", per: "minute" }, NOW);
    expect(ok.errors).toEqual([]);
    expect(ok.result!.perMinute).toEqual({ p50: 30, p95: 30, p99: 30, max: 30 });
    expect(ok.result!.proposed).toMatchObject({ deniedRequests: 600, subjectsDenied: 1 });
  });
});

describe("certification reports on the version history", () => {
  const result = (requirement: RequirementResult["requirement"], subject: string, status: RequirementResult["status"]): RequirementResult => ({
    requirement,
    subject,
    status,
    source: "default",
    expected: "e",
    measured: "m",
  });
  const report = (passed: boolean, results: RequirementResult[]): CertificationReport => ({
    version: 1,
    checksum: "c".repeat(64),
    mode: "ephemeral",
    target: null,
    instances: 2,
    startedAt: new Date(NOW).toISOString(),
    durationMs: 1000,
    passed,
    results,
    scaled: [],
    notes: [],
  });
  const save = (version: number, r: CertificationReport | Record<string, unknown>, atMs: number) =>
    saveCertificationReport(db, { version, passed: r.passed === true, mode: "ephemeral", target: null, instances: 2, report: JSON.parse(JSON.stringify(r)), html: "<p>x</p>", createdAt: new Date(atMs) });

  it("shows each version's latest report, pass / fail per requirement with the failing subjects", async () => {
    await save(1, report(true, [result("boundary", "free-api_key", "pass")]), NOW - 60_000);
    const failing = report(false, [
      result("boundary", "free-api_key", "pass"),
      result("boundary", "pro-api_key", "pass"),
      result("boundaryBurst", "pro-orders-write-tenant", "fail"),
      result("failureMode", "export", "not_verified"),
    ]);
    const id = await save(1, failing, NOW);
    await save(2, { passed: true, results: "not a list" }, NOW);
    const byVersion = await certificationsOf(db, [1, 2, 3]);
    expect([...byVersion.keys()].sort()).toEqual([1, 2]);
    const v1 = byVersion.get(1)!;
    expect(v1).toMatchObject({ id, passed: false, counts: { pass: 2, fail: 1, not_verified: 1 }, unreadable: false });
    expect(v1.requirements.map((r) => [r.requirement, r.status, r.pass, r.failing])).toEqual([
      ["boundary", "pass", 2, []],
      ["boundaryBurst", "fail", 0, ["pro-orders-write-tenant"]],
      ["failureMode", "not_verified", 0, ["export"]],
    ]);
    expect(byVersion.get(2)).toMatchObject({ unreadable: true, requirements: [] });
    const whole = await readCertification(db, id);
    expect(whole.report.results).toHaveLength(4);
    expect(whole.html).toBe("<p>x</p>");
    expect(formatReportHtml(failing)).toContain("Certification of policy v1");
  });

  it("answers not found for an unknown or malformed id", async () => {
    for (const id of ["cert_00000000000000000000", "../etc/passwd", "cert_zz"]) {
      const error = await readCertification(db, id).catch((e: unknown) => e);
      expect(error, id).toBeInstanceOf(ServiceError);
      expect((error as ServiceError).code, id).toBe("not_found");
    }
  });
});
