/**
 * What the Billing page says about a month beyond its figures: a month past its close that is
 * still open says why (the worker's close job has not run since when), and a quota counter that
 * differed from quota usage at the worker's last reconciliation shows on its line and the period,
 * with both numbers, the cause from the policy history (here: a rollback retired the line) and
 * what to do.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "../../../test/helpers";
import type { Db } from "../../db/client";
import { recordJobRun } from "../../db/job-runs";
import { closeDuePeriods } from "../../jobs/billing-close";
import { publishTestPolicy, seedTenants, testPolicyDocument } from "../../jobs/testing/fixtures";
import { billingOverview } from "./billing-overview";
import { getQuotas } from "../observe/usage-query";

const GRACE = 3_600_000;
const DEC_5 = Date.UTC(2026, 11, 5, 9, 0);
let fresh: FreshDatabase;
let db: Db;

beforeAll(async () => {
  fresh = await freshDatabase();
  db = fresh.db;
  await seedTenants(db);
  // v1: globex on free; v2 moves it to pro with its own month quota of 60,000 (an override of the
  // tier's 500); v3 rolls back to v1, which retires globex's pro quota lines.
  await publishTestPolicy(db, 1, new Date(Date.UTC(2026, 10, 1)), { globex: "free" });
  const v2 = testPolicyDocument({ globex: "pro" });
  const override = { id: "q_pro_all_m", operation: "*", period: "month", limit: 60_000, overage: "bill" };
  v2.tenants.globex = { ...v2.tenants.globex!, overrides: [{ kind: "quota", operation: "*", period: "month", expiresAtMs: null, quota: override }] as never[] };
  await db.policyVersion.create({ data: { version: 2, document: v2, checksum: "test2", author: "test", createdAt: new Date(Date.UTC(2026, 11, 2, 10)) } });
  await db.policyVersion.create({
    data: { version: 3, document: testPolicyDocument({ globex: "free" }), checksum: "test3", author: "test", note: "rollback to v1", rolledBackFrom: 1, createdAt: new Date(Date.UTC(2026, 11, 3, 14)) },
  });
  await db.quotaUsage.create({ data: { tenant: "acme", quotaId: "q_free_all_m", period: "2026-11", used: 40n } });
  await db.quotaUsage.create({ data: { tenant: "globex", quotaId: "q_pro_all_m", period: "2026-12", used: 907n } });
});

afterAll(async () => {
  await fresh?.drop();
});

describe("a month past its close", () => {
  it("says the close job never ran, then since when it has not, and reads final once closed", async () => {
    const never = await billingOverview(db, "2026-11", { graceMs: GRACE, nowMs: DEC_5 });
    expect(never.status).toBe("provisional");
    expect(never.close).toMatchObject({ overdue: true, closesAtMs: Date.UTC(2026, 11, 1, 1), lastRunAtMs: null });
    expect(never.close.why).toMatch(/never run/);

    await recordJobRun(db, "billing-close", { nowMs: Date.UTC(2026, 11, 1, 0, 30), result: { closed: [] } });
    const stale = await billingOverview(db, "2026-11", { graceMs: GRACE, nowMs: DEC_5 });
    expect(stale.close.why).toContain("has not run since 2026-12-01 00:30 UTC (4 days ago)");

    expect(await closeDuePeriods({ db }, { nowMs: DEC_5, graceMs: GRACE })).toEqual(["2026-11"]);
    const closed = await billingOverview(db, "2026-11", { graceMs: GRACE, nowMs: DEC_5 });
    expect(closed.status).toBe("final");
    expect(closed.close.overdue).toBe(false);
    expect(closed.close.why).toBeNull();

    // The current month is not overdue: no reason to give.
    expect((await billingOverview(db, "2026-12", { graceMs: GRACE, nowMs: DEC_5 })).close).toMatchObject({ overdue: false, why: null });
  });
});

describe("enforcement and export disagreeing", () => {
  it("shows the difference on the line and the period with both numbers, the rollback that retired the line, and what to do", async () => {
    await recordJobRun(db, "reconcile", {
      nowMs: DEC_5 - 60_000,
      result: { checked: 5, differences: [{ tenant: "globex", quotaId: "q_pro_all_m", period: "2026-12", redis: 1_005, expected: 907, degraded: 0 }] },
    });
    const o = await billingOverview(db, "2026-12", { graceMs: GRACE, nowMs: DEC_5 });
    expect(o.drift.checkedAtMs).toBe(DEC_5 - 60_000);
    expect(o.drift.differences).toHaveLength(1);
    const [d] = o.drift.differences;
    expect(d).toMatchObject({ tenant: "globex", redis: 1_005, expected: 907, difference: 98, cause: "retired" });
    expect(d!.why).toContain("Enforcement counted 1,005 units, the export bills 907");
    expect(d!.why).toContain("the rollback to v1 (published as v3 at 2026-12-03 14:00 UTC)");
    expect(d!.todo).toMatch(/Bill the export's figure/);
    const line = o.lines.find((l) => l.tenant === "globex" && l.quotaId === "q_pro_all_m")!;
    expect(line.used).toBe(907);
    expect(line.drift.map((x) => x.redis)).toEqual([1_005]);
    expect(o.tenants.find((t) => t.tenant === "globex")!.drifted).toBe(1);
    expect(o.tenants.find((t) => t.tenant === "acme")!.drifted).toBe(0);
    // The retired line keeps the limit it had while in force (globex's override, 60,000): the tenant
    // page and the dashboards show what billing shows, marked retired and not projected.
    expect(line.limit).toBe(60_000);
    expect(line.override).toBe(true);
    const burn = (await getQuotas(db, { period: "2026-12", tenant: "globex", nowMs: DEC_5 })).quotas.find((q) => q.quotaId === "q_pro_all_m")!;
    expect(burn).toMatchObject({ limit: 60_000, used: 907, retired: true, projected: 907, runsOutAt: null });
    expect((await getQuotas(db, { period: "2026-12", tenant: "globex", nowMs: DEC_5 })).quotas.find((q) => q.quotaId === "q_free_all_m")).toMatchObject({ retired: false });
    // November is not concerned by December's counters.
    expect((await billingOverview(db, "2026-11", { graceMs: GRACE, nowMs: DEC_5 })).drift.differences).toEqual([]);
  });
});
