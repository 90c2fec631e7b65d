/**
 * The limit advisor against rollup rows whose answers were worked out by hand (the comments show
 * the arithmetic): percentiles of per-subject peaks, the per-second lower bounds, and what a
 * proposed limit would have denied.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, freshDatabasePerFile, type FreshDatabase } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { adviseLimit, percentiles } from "./advisor";

const NOW = Date.UTC(2026, 11, 3, 12, 0, 0);
const MIN = 60_000;
const stores = freshDatabasePerFile();
let db: PrismaClient;

beforeAll(async () => {
  ({ db } = stores);
  const rows: { granularity: string; bucketStart: Date; tenant: string; tier: string; operation: string; outcome: string; keyPrefix: string; count: bigint }[] = [];
  const row = (granularity: string, atMs: number, tenant: string, keyPrefix: string, count: number, outcome = "allowed") =>
    rows.push({ granularity, bucketStart: new Date(atMs), tenant, tier: "t", operation: keyPrefix === "" ? "read" : "", outcome, keyPrefix, count: BigInt(count) });
  // Keys k1..k10 (k1–k5 of tenant a, k6–k10 of tenant b): per minute 10·i, 10·i − 5 and 1 requests.
  for (let i = 1; i <= 10; i++) {
    const tenant = i <= 5 ? "a" : "b";
    const key = `k${String(i).padStart(2, "0")}0000000000`.slice(0, 12);
    // the busiest minute split over two outcomes: denied requests are demand too
    row("minute", NOW - 60 * MIN, tenant, key, 10 * i - 2);
    row("minute", NOW - 60 * MIN, tenant, key, 2, "denied");
    row("minute", NOW - 30 * MIN, tenant, key, 10 * i - 5);
    row("minute", NOW - 10 * MIN, tenant, key, 1);
  }
  // Ten days ago, before minute rows: hours only. k03: 3,600 in an hour (≥ 60 a minute); k10: 6,000 (≥ 100).
  row("hour", NOW - 10 * 86_400_000, "a", "k03000000000", 3_600);
  row("hour", NOW - 10 * 86_400_000, "b", "k10000000000", 6_000);
  // Tenant rows: the sums of their keys.
  for (const [tenant, first] of [["a", 1], ["b", 6]] as const) {
    const sum = (f: (i: number) => number) => [0, 1, 2, 3, 4].reduce((s, j) => s + f(first + j), 0);
    row("minute", NOW - 60 * MIN, tenant, "", sum((i) => 10 * i));
    row("minute", NOW - 30 * MIN, tenant, "", sum((i) => 10 * i - 5));
    row("minute", NOW - 10 * MIN, tenant, "", 5);
    row("hour", NOW - 10 * 86_400_000, tenant, "", tenant === "a" ? 3_600 : 6_000);
  }
  // another tier's traffic must not count
  row("minute", NOW - 60 * MIN, "z", "z00000000000", 5_000);
  rows[rows.length - 1]!.tier = "other";
  await db.usageRollup.createMany({ data: rows });
});
describe("the limit advisor", () => {
  it("takes nearest-rank percentiles", () => {
    expect(percentiles([5, 1, 4, 2, 3])).toEqual({ p50: 3, p95: 5, p99: 5, max: 5 });
    expect(percentiles([])).toEqual({ p50: 0, p95: 0, p99: 0, max: 0 });
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentiles(hundred)).toEqual({ p50: 50, p95: 95, p99: 99, max: 100 });
  });

  it("gives the per-key peak percentiles worked out by hand, with hour rows as per-minute lower bounds", async () => {
    const r = await adviseLimit(db, { tier: "t", operation: "*", scope: "api_key", nowMs: NOW });
    // peaks: k1..k10 = 10, 20, max(30, 3600/60 = 60), 40, …, 100 (max(100, 6000/60 = 100))
    // sorted 10 20 40 50 60 60 70 80 90 100: p50 = rank 5 = 60, p95 = rank 10 = 100
    expect(r.subjects).toBe(10);
    expect(r.perMinute).toEqual({ p50: 60, p95: 100, p99: 100, max: 100 });
    // per second ≥ ⌈peak / 60⌉: 1 1 1 1 1 1 2 2 2 2
    expect(r.perSecondAtLeast).toEqual({ p50: 1, p95: 2, p99: 2, max: 2 });
    // Σ (10i + 10i − 5 + 1) for i = 1..10 = 1,060 by the minute, plus 9,600 by the hour
    expect(r.requests).toBe(10_660);
    expect(r.top[0]).toEqual({ subject: "b/k10000000000", peakPerMinute: 100, requests: 6_000 + 196 });
  });

  it("says what a proposed limit would have denied: the share of requests and the subjects", async () => {
    const r = await adviseLimit(db, { tier: "t", operation: "*", scope: "api_key", nowMs: NOW, proposed: { limit: 50, per: "minute" } });
    // minutes past 50: k6 10+5, k7 20+15, k8 30+25, k9 40+35, k10 50+45 = 275; hours past 3,000: k3 600, k10 3,000
    expect(r.proposed).toEqual({ limit: 50, per: "minute", deniedRequests: 3_875, deniedShare: 3_875 / 10_660, subjectsDenied: 6 });
    const perSecond = await adviseLimit(db, { tier: "t", operation: "*", scope: "api_key", nowMs: NOW, proposed: { limit: 1, per: "second" } });
    // 1/s = 60 a minute: minutes past 60: k7 10+5, k8 20+15, k9 30+25, k10 40+35; hours past 3,600: k10 2,400
    expect(perSecond.proposed).toMatchObject({ deniedRequests: 2_580, subjectsDenied: 4 });
  });

  it("works per tenant, and says that per-address rates are not recorded", async () => {
    const r = await adviseLimit(db, { tier: "t", operation: "*", scope: "tenant", nowMs: NOW });
    // tenant a: max(150, 3600/60) = 150; tenant b: max(400, 100) = 400
    expect(r.perMinute).toEqual({ p50: 150, p95: 400, p99: 400, max: 400 });
    const ip = await adviseLimit(db, { tier: "t", operation: "*", scope: "ip", nowMs: NOW });
    expect(ip.subjects).toBe(0);
    expect(ip.notes[0]).toMatch(/Client addresses are not recorded/);
  });
});

describe("the limit advisor on traffic that began minutes ago (minute rows inside one hour)", () => {
  // 10:05–10:24 one key sends 245 requests a minute; a limit of 100 a minute denies 145 of each
  // minute's 245: 2,900 of 4,900 = 59.2 %. The rollup writes the hour row 10:00 alongside (4,900).
  const now = Date.UTC(2026, 11, 5, 10, 25, 30);
  let young: FreshDatabase;

  beforeAll(async () => {
    young = await freshDatabase();
    const rows: { granularity: string; bucketStart: Date; tenant: string; tier: string; operation: string; outcome: string; keyPrefix: string; count: bigint }[] = [];
    for (const [granularity, atMs, allowed, denied] of [
      ...Array.from({ length: 20 }, (_, m) => ["minute", Date.UTC(2026, 11, 5, 10, 5 + m), 100, 145] as const),
      ["hour", Date.UTC(2026, 11, 5, 10), 2_000, 2_900] as const,
    ]) {
      for (const [outcome, n] of [["allowed", allowed], ["denied", denied]] as const) {
        rows.push({ granularity, bucketStart: new Date(atMs), tenant: "acme", tier: "free", operation: "", outcome, keyPrefix: "acme00000000", count: BigInt(n) });
        rows.push({ granularity, bucketStart: new Date(atMs), tenant: "acme", tier: "free", operation: "read", outcome, keyPrefix: "", count: BigInt(n) });
      }
    }
    await young.db.usageRollup.createMany({ data: rows });
  });
  afterAll(async () => {
    await young?.drop();
  });

  it("judges a per-minute limit on the minute rows (59 % denied), not on the hour's count / 60", async () => {
    const r = await adviseLimit(young.db, { tier: "free", operation: "*", scope: "api_key", nowMs: now, proposed: { limit: 100, per: "minute" } });
    expect(r.requests).toBe(4_900);
    expect(r.perMinute.max).toBe(245);
    expect(r.proposed).toEqual({ limit: 100, per: "minute", deniedRequests: 2_900, deniedShare: 2_900 / 4_900, subjectsDenied: 1 });
    // Minute rows from the hour the oldest minute is in: never a negative span.
    expect(r.minuteDays).toBeCloseTo((now - Date.UTC(2026, 11, 5, 10) - 30_000) / 86_400_000, 10);
    expect(r.notes.join(" ")).not.toMatch(/-0\.0|−0\.0/);
  });
});
