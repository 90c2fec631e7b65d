import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "../../../test/helpers";
import type { Db } from "../../db/client";
import { closeDuePeriods } from "../../jobs/billing-close";
import { drainClosedMinutes } from "../../jobs/rollup";
import { emptyExpected, seedTenants, testPolicyDocument, writeDecisions, type Decision } from "../../jobs/testing/fixtures";
import { exportBilling } from "./billing-export";
import { BILLING_FORMATS, sha256Hex } from "./billing-format";
import type { LinePeriod } from "./statement";
import { idempotencyKey } from "./billing-meter-formats";
import { reconcileBilling } from "./billing-reconcile";

const LA = "America/Los_Angeles";
const GRACE = 3_600_000;
/** acme moves from free to pro on day 10 of its period Oct 15 – Nov 14: local midnight on Oct 24 in Los Angeles (00:00 PDT). */
const TIER_CHANGE = Date.UTC(2026, 9, 24, 7);
const AFTER_ALL = Date.UTC(2026, 11, 1, 10);

type Line = { tenant: string; quotaId: string; tier: string; used: number; denied: number; tierHistory: Array<{ tier: string; from: string; to: string }>; billingPeriod?: LinePeriod };

let redis: Redis;
const worlds: FreshDatabase[] = [];

const at = (iso: string, n: number, d: Omit<Decision, "atMs" | "keyPrefix" | "outcome"> & { outcome?: Decision["outcome"]; operation: Decision["operation"] }): Decision[] =>
  Array.from({ length: n }, (_, i) => ({ atMs: Date.parse(iso) + i * 1_000, keyPrefix: `${d.tenant.slice(0, 4)}00000000`, outcome: "allowed", ...d }));

/** acme: anchored on the 15th in Los Angeles; initech: on the 1st in Los Angeles; globex and umbrella: the UTC calendar month. */
const decisions: Decision[] = [
  ...at("2026-10-10T12:00:00Z", 3, { tenant: "acme", tier: "free", operation: "read" }), // Sep 15 – Oct 14: October's
  ...at("2026-10-15T07:30:00Z", 5, { tenant: "acme", tier: "free", operation: "read" }), // Oct 15 – Nov 14: November's
  ...at("2026-10-23T20:00:00Z", 4, { tenant: "acme", tier: "free", operation: "read" }),
  ...at("2026-10-23T20:10:00Z", 1, { tenant: "acme", tier: "free", operation: "read", outcome: "denied", deniedQuota: "q_free_all_m" }),
  ...at("2026-10-24T07:30:00Z", 4, { tenant: "acme", tier: "pro", operation: "read" }),
  ...at("2026-10-24T07:40:00Z", 2, { tenant: "acme", tier: "pro", operation: "write" }),
  ...at("2026-11-15T07:59:00Z", 2, { tenant: "acme", tier: "pro", operation: "read" }), // 23:59 PST on Nov 14
  ...at("2026-11-15T08:30:00Z", 7, { tenant: "acme", tier: "pro", operation: "read" }), // Nov 15 – Dec 14: December's
  ...at("2026-10-20T10:00:00Z", 2, { tenant: "globex", tier: "pro", operation: "read" }),
  ...at("2026-11-05T10:00:00Z", 10, { tenant: "globex", tier: "pro", operation: "read" }),
  ...at("2026-11-30T23:00:00Z", 3, { tenant: "initech", tier: "pro", operation: "read" }), // Nov 30, 15:00 PST
  ...at("2026-12-01T07:30:00Z", 4, { tenant: "initech", tier: "pro", operation: "read" }), // Nov 30, 23:30 PST: still November
  ...at("2026-12-01T08:30:00Z", 1, { tenant: "initech", tier: "pro", operation: "read" }), // Dec 1, 00:30 PST
];

async function makeWorld(name: string, anchored: boolean): Promise<Db> {
  const fresh = await freshDatabase();
  worlds.push(fresh);
  const db = fresh.db;
  await seedTenants(db, { acme: "pro" });
  const billing: Record<string, { anchor: string; timeZone: string }> = anchored ? { acme: { anchor: "2026-03-15", timeZone: LA }, initech: { anchor: "2026-01-01", timeZone: LA } } : {};
  const doc = (tiers: Record<string, "free" | "pro">) => {
    const d = testPolicyDocument(tiers);
    return { ...d, tenants: Object.fromEntries(Object.entries(d.tenants).map(([slug, t]) => [slug, billing[slug] ? { ...t, billing: billing[slug] } : t])) };
  };
  await db.policyVersion.create({ data: { version: 1, document: doc({}), checksum: "p1", author: "test", createdAt: new Date(Date.UTC(2026, 8, 1)) } });
  await db.policyVersion.create({ data: { version: 2, document: doc({ acme: "pro" }), checksum: "p2", author: "test", createdAt: new Date(TIER_CHANGE) } });
  const prefix = `${testRedisPrefix()}${name}:`;
  await writeDecisions(redis, prefix, decisions, emptyExpected());
  await drainClosedMinutes({ db, redis, prefix }, { nowMs: AFTER_ALL });
  return db;
}

const linesOf = async (db: Db, period: string, nowMs = AFTER_ALL) => (JSON.parse((await exportBilling(db, { period, format: "json" }, { nowMs })).body) as { status: string; lines: Line[] }).lines;
const figures = (lines: Line[], tenant: string) => lines.filter((l) => l.tenant === tenant).map((l) => [l.quotaId, l.tier, l.used, l.denied, l.billingPeriod ? `${l.billingPeriod.start}..${l.billingPeriod.end}` : "month"]);

beforeAll(() => {
  redis = new Redis(testRedisUrl());
});

afterAll(async () => {
  for (const w of worlds) await w.drop();
  await redis?.quit();
});

describe("the billing export follows each anchored tenant's own periods", () => {
  let anchored: Db;
  let plain: Db;

  it("a month holds each anchored tenant's period whose last local day is in it; unanchored tenants keep the UTC month", async () => {
    anchored = await makeWorld("p1", true);
    plain = await makeWorld("p2", false);
    const nov = await linesOf(anchored, "2026-11");
    // acme: the period Oct 15 – Nov 14 (PT), two tiers' lines after the plan change on day 10, each with the tier's local dates.
    expect(figures(nov, "acme")).toEqual([
      ["q_free_all_m", "free", 9, 1, "2026-10-15..2026-11-14"],
      ["q_pro_all_m", "pro", 8, 0, "2026-10-15..2026-11-14"],
      ["q_pro_write_d", "pro", 2, 0, "2026-10-15..2026-11-14"],
    ]);
    const acme = nov.find((l) => l.tenant === "acme")!;
    expect(acme.billingPeriod).toEqual({ label: "2026-10-15@America/Los_Angeles", timeZone: LA, start: "2026-10-15", end: "2026-11-14", startAt: "2026-10-15T07:00:00.000Z", endAt: "2026-11-15T08:00:00.000Z" });
    expect(acme.tierHistory).toEqual([
      { tier: "free", from: "2026-10-15", to: "2026-10-23" },
      { tier: "pro", from: "2026-10-24", to: "2026-11-14" },
    ]);
    // initech, anchored on the 1st in Los Angeles: the local month, with 4 decisions made on Dec 1 UTC.
    expect(figures(nov, "initech").find((f) => f[0] === "q_pro_all_m")).toEqual(["q_pro_all_m", "pro", 7, 0, "2026-11-01..2026-11-30"]);
    // The same traffic without anchors: acme's November is the UTC month, and globex's lines are byte for byte the same in both.
    const novPlain = await linesOf(plain, "2026-11");
    expect(figures(novPlain, "acme")).toEqual([
      ["q_pro_all_m", "pro", 9, 0, "month"],
      ["q_pro_write_d", "pro", 0, 0, "month"],
    ]);
    expect(figures(novPlain, "initech").find((f) => f[0] === "q_pro_all_m")).toEqual(["q_pro_all_m", "pro", 3, 0, "month"]);
    for (const t of ["globex", "umbrella"]) expect(JSON.stringify(nov.filter((l) => l.tenant === t)), t).toBe(JSON.stringify(novPlain.filter((l) => l.tenant === t)));
    expect(figures(nov, "globex")).toEqual([["q_pro_all_m", "pro", 10, 0, "month"], ["q_pro_write_d", "pro", 0, 0, "month"]]);
    // October and December (current, provisional) hold the periods before and after.
    expect(figures(await linesOf(anchored, "2026-10"), "acme")).toEqual([["q_free_all_m", "free", 3, 0, "2026-09-15..2026-10-14"]]);
    const dec = await linesOf(anchored, "2026-12");
    expect(figures(dec, "acme").find((f) => f[0] === "q_pro_all_m")).toEqual(["q_pro_all_m", "pro", 7, 0, "2026-11-15..2026-12-14"]);
    expect(figures(dec, "initech").find((f) => f[0] === "q_pro_all_m")).toEqual(["q_pro_all_m", "pro", 1, 0, "2026-12-01..2026-12-31"]);
    // Reconciliation reads each anchored tenant over its own periods: rollups, quota usage and export agree.
    const report = await reconcileBilling(anchored, "2026-11");
    expect(report.rows.find((r) => r.tenant === "acme")).toMatchObject({ rollups: 17, quotaUsage: 17, exported: 17, quotaDenials: 1, exportedDenied: 1, ok: true });
    expect(report.ok).toBe(true);
  }, 120_000);

  it("closes November only once its last tenant period has ended (08:00 UTC on Dec 1 for initech) plus the grace", async () => {
    expect(await closeDuePeriods({ db: anchored }, { nowMs: Date.UTC(2026, 11, 1, 1, 30), graceMs: GRACE })).toEqual(["2026-10"]);
    expect(await closeDuePeriods({ db: plain }, { nowMs: Date.UTC(2026, 11, 1, 1, 30), graceMs: GRACE })).toEqual(["2026-10", "2026-11"]);
    expect(await closeDuePeriods({ db: anchored }, { nowMs: Date.UTC(2026, 11, 1, 9, 30), graceMs: GRACE })).toEqual(["2026-11"]);
  });

  it("re-exports a closed month byte for byte in every format, with the checksums recorded at close and period idempotency keys", async () => {
    const provisional = await linesOf(anchored, "2026-11");
    for (const format of BILLING_FORMATS) {
      const a = await exportBilling(anchored, { period: "2026-11", format }, { nowMs: AFTER_ALL });
      const b = await exportBilling(anchored, { period: "2026-11", format }, { nowMs: AFTER_ALL + 86_400_000 });
      expect(a.status).toBe("final");
      expect(b.body, format).toBe(a.body);
      const period = await anchored.billingPeriod.findUniqueOrThrow({ where: { period: "2026-11" } });
      expect((period.checksums as Record<string, string>)[format], format).toBe(sha256Hex(a.body));
    }
    // The frozen lines are the figures the open month showed.
    expect(figures(await linesOf(anchored, "2026-11"), "acme")).toEqual(figures(provisional, "acme"));
    const csv = (await exportBilling(anchored, { period: "2026-11", format: "csv" })).body.split("\r\n");
    expect(csv[0]).toMatch(/,denied,period_label,period_start,period_end,period_start_at,period_end_at,time_zone$/);
    expect(csv.find((r) => r.includes(",acme,") && r.includes("q_free_all_m"))).toBe(
      '2026-11,final,usage,0,acme,"Acme, Inc.",free,free:2026-10-15..2026-10-23;pro:2026-10-24..2026-11-14,q_free_all_m,*,month,300,block,9,0,1,2026-10-15@America/Los_Angeles,2026-10-15,2026-11-14,2026-10-15T07:00:00.000Z,2026-11-15T08:00:00.000Z,America/Los_Angeles',
    );
    const orb = JSON.parse((await exportBilling(anchored, { period: "2026-11", format: "orb" })).body) as { events: Array<{ idempotency_key: string; external_customer_id: string; properties: { quota_id: string; from: string; to: string } }> };
    const acmeFree = orb.events.find((e) => e.external_customer_id === "acme" && e.properties.quota_id === "q_free_all_m")!;
    expect(acmeFree.idempotency_key).toBe(idempotencyKey("acme", "q_free_all_m", "2026-10-15@America/Los_Angeles", "usage"));
    expect(acmeFree.properties).toMatchObject({ from: "2026-10-15", to: "2026-10-23" });
  });

  it("a billing change mid-month (UTC calendar → the 25th in Los Angeles) bills two periods in that month, each with its own usage", async () => {
    const change = Date.UTC(2026, 10, 20, 13, 45, 10);
    const fresh = await freshDatabase();
    worlds.push(fresh);
    const db = fresh.db;
    await seedTenants(db);
    const base = testPolicyDocument();
    const v2 = { ...base, tenants: { ...base.tenants, umbrella: { ...base.tenants.umbrella!, billing: { anchor: "2026-03-25", timeZone: LA }, billingChange: { atMs: change, previous: null } } } };
    await db.policyVersion.create({ data: { version: 1, document: base, checksum: "p1", author: "test", createdAt: new Date(Date.UTC(2026, 8, 1)) } });
    await db.policyVersion.create({ data: { version: 2, document: v2, checksum: "p2", author: "test", createdAt: new Date(change) } });
    const prefix = `${testRedisPrefix()}p3:`;
    const traffic = [
      ...at("2026-11-10T12:00:00Z", 3, { tenant: "umbrella", tier: "free", operation: "read" }), // Nov 1 – Nov 20 (UTC, ends at the change)
      ...at("2026-11-21T12:00:00Z", 5, { tenant: "umbrella", tier: "free", operation: "read" }), // the change – Nov 24 (PT)
      ...at("2026-11-26T12:00:00Z", 2, { tenant: "umbrella", tier: "free", operation: "read" }), // Nov 25 – Dec 24: December's
    ];
    await writeDecisions(redis, prefix, traffic, emptyExpected());
    await drainClosedMinutes({ db, redis, prefix }, { nowMs: AFTER_ALL });
    const nov = await linesOf(db, "2026-11");
    expect(nov.filter((l) => l.tenant === "umbrella").map((l) => [l.billingPeriod?.label, l.billingPeriod?.start, l.billingPeriod?.end, l.billingPeriod?.timeZone, l.used])).toEqual([
      ["2026-11", "2026-11-01", "2026-11-20", "UTC", 3],
      ["2026-11-20T054510@America/Los_Angeles", "2026-11-20", "2026-11-24", LA, 5],
    ]);
    expect(figures(await linesOf(db, "2026-12"), "umbrella")).toEqual([["q_free_all_m", "free", 2, 0, "2026-11-25..2026-12-24"]]);
    // Frozen at close: both lines of the one quota, the same figures, the same ids on every re-export.
    expect(await closeDuePeriods({ db }, { nowMs: Date.UTC(2026, 11, 1, 1, 30), graceMs: GRACE })).toEqual(["2026-11"]);
    const final = await exportBilling(db, { period: "2026-11", format: "openmeter" }, { nowMs: AFTER_ALL });
    const ids = (JSON.parse(final.body) as Array<{ id: string; subject: string; data: { units: number } }>).filter((e) => e.subject === "umbrella");
    expect(ids.map((e) => [e.id, e.data.units])).toEqual([
      [idempotencyKey("umbrella", "q_free_all_m", "2026-11", "usage"), 3],
      [idempotencyKey("umbrella", "q_free_all_m", "2026-11-20T054510@America/Los_Angeles", "usage"), 5],
    ]);
    expect((await exportBilling(db, { period: "2026-11", format: "openmeter" }, { nowMs: AFTER_ALL })).body).toBe(final.body);
  }, 120_000);
});
