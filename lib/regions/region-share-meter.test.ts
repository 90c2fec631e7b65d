/**
 * What a cut link falls back to (lib/regions/region-share-meter.ts, lib/policy/region-shares.ts
 * applyDegradedShares): a region's share of a shared limit, measured from what it sent and what the
 * others' batches brought, per limit and window, floored; and the policy enforced with it.
 */
import { describe, expect, it } from "vitest";
import { compileFixture } from "../decision/testing/fixture";
import { counterKeys, limitIdOfCounterKey } from "../policy/counter-keys";
import { applyDegradedShares, degradedLimit, sharedLimitNames } from "../policy/region-shares";
import { FLOOR_OF_EQUAL, RegionShareMeter, SETTLE_MS, windowOfUnits } from "./region-share-meter";
import { replicatedWindow, type ReplicatedUnits } from "./replication";
import type { LimitCheck } from "../store/types";
import { replicatedCheck } from "./testing/checks";

const ID = "0123456789abcdef";
const CAP = "fedcba9876543210";
const check = (over: Partial<LimitCheck> = {}): LimitCheck => replicatedCheck(counterKeys.counter("acme", ID, "_", "sl:"), over);
/** `units` admitted at `nowMs` for `c`, as a batch carries them. */
const units = (nowMs: number, n: number, c: LimitCheck = check()): ReplicatedUnits => ({ ...replicatedWindow(c, nowMs)!, units: n });

describe("which limit and window a replicated unit counts for", () => {
  it("names the limit of a tenant's counter, a global limit's and a global cap's, and nothing else", () => {
    expect(limitIdOfCounterKey(`${counterKeys.counter("acme", ID, "sk_1:x", "sl:")}:4000`)).toBe(ID);
    expect(limitIdOfCounterKey(counterKeys.globalLimit(ID, "sl:"))).toBe(ID);
    expect(limitIdOfCounterKey(counterKeys.globalCap(CAP, "sl:"))).toBe(CAP);
    expect(limitIdOfCounterKey(counterKeys.quota("acme", ID, "sl:"))).toBeNull();
    expect(limitIdOfCounterKey("sl:{t:acme}:c:not-an-id:_")).toBeNull();
  });

  it("is the epoch-aligned window of a fixed window's key and of a sliding window counter's sub-window", () => {
    expect(windowOfUnits(units(9_999, 1))).toEqual({ startMs: 8_000, endMs: 12_000 });
    const swc = check({ algorithm: "sliding_window_counter", windowMs: 60_000, precision: 6 });
    // sub-window 7 (70–80 s) of 10 s sub-windows lies in the aligned minute 60–120 s.
    expect(windowOfUnits(units(75_000, 1, swc))).toEqual({ startMs: 60_000, endMs: 120_000 });
    expect(windowOfUnits(units(59_999, 1, swc))).toEqual({ startMs: 0, endMs: 60_000 });
  });
});

describe("a region's share of a shared limit", () => {
  it("is own ÷ (own + the others') over the last complete window, counting late batches of it too", () => {
    const meter = new RegionShareMeter();
    meter.record([units(1_000, 45)], null);
    meter.record([units(2_000, 3)], "eu");
    meter.record([units(3_500, 2)], "eu");
    // The window 0–4 s is not complete before it settled: the current one is measured meanwhile.
    expect(meter.measured(ID, 3_900)).toBeCloseTo(45 / 50);
    // The next window's traffic is another demand: the complete window still decides once settled.
    meter.record([units(4_100, 1)], "eu");
    expect(meter.measured(ID, 4_000 + SETTLE_MS)).toBeCloseTo(0.9);
    // Ended but not settled, with nothing older: that window still, not the next one's first unit.
    expect(meter.measured(ID, 4_000 + SETTLE_MS - 1)).toBeCloseTo(0.9);
    expect(meter.measured("aaaaaaaaaaaaaaaa", 10_000)).toBeNull();
  });

  it("follows demand that moved: a newer complete window replaces an older one", () => {
    const meter = new RegionShareMeter();
    meter.record([units(1_000, 90)], null);
    meter.record([units(1_000, 10)], "eu");
    meter.record([units(5_000, 10)], null);
    meter.record([units(5_000, 90)], "eu");
    expect(meter.measured(ID, 8_000 + SETTLE_MS)).toBeCloseTo(0.1);
    expect(meter.measured(ID, 4_000 + SETTLE_MS)).toBeCloseTo(0.9);
  });

  it("is floored at a tenth of an equal share, and a limit never seen gets the equal share", () => {
    const meter = new RegionShareMeter();
    meter.record([units(1_000, 1_000)], "eu");
    meter.record([units(1_000, 1_000)], "ap");
    const s = meter.snapshot(10_000, 3);
    expect(s.ratios.get(ID)).toBeCloseTo(FLOOR_OF_EQUAL / 3);
    expect(s.otherwise).toBeCloseTo(1 / 3);
    expect(meter.otherRegions).toBe(2);
  });

  it("measured in every region over the same window, the floored shares add up to at most 1 + (R − 1) ÷ R × 10 %", () => {
    for (const demand of [[90, 10], [100, 0, 0], [50, 30, 20], [97, 1, 1, 1], [1, 0]]) {
      const r = demand.length;
      const total = demand.reduce((a, b) => a + b, 0);
      const sum = demand
        .map((own, i) => {
          const meter = new RegionShareMeter();
          meter.record([units(0, own)].filter((u) => u.units > 0), null);
          demand.forEach((n, j) => j !== i && n > 0 && meter.record([units(0, n)], `r${j}`));
          return meter.snapshot(4_000 + SETTLE_MS, r).ratios.get(ID) ?? 1 / r;
        })
        .reduce((a, b) => a + b, 0);
      expect(sum, `${demand} of ${total}`).toBeLessThanOrEqual(1 + ((r - 1) / r) * FLOOR_OF_EQUAL + 1e-9);
    }
  });
});

describe("the policy a degraded region enforces", () => {
  const POLICY = {
    version: 1,
    operations: [{ name: "orders", match: ["GET /v1/orders"] }],
    tiers: [
      {
        name: "free",
        limits: [
          { operation: "*", scope: "tenant", algorithm: "fixed_window", limit: 100, window: "4s", regions: "shared" },
          { operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 50, window: "4s" },
        ],
      },
    ],
    tenants: [{ slug: "acme", name: "Acme", tier: "free" }],
    globalCaps: [{ operation: "orders", limit: 1_000, window: "1m", regions: "shared" }],
  };

  it("replaces each shared limit and cap by floor(L × its share) and leaves the others alone", () => {
    const { doc } = compileFixture(POLICY as never);
    const [shared, local] = doc.tiers.free!.limits;
    const cap = doc.globalCaps[0]!;
    const out = applyDegradedShares(doc, { ratios: new Map([[shared!.id, 0.9]]), otherwise: 0.5, sinceMs: 0 });
    expect(out.tiers.free!.limits[0]).toMatchObject({ limit: 90, burst: 90 });
    expect(out.tiers.free!.limits[1]).toBe(local);
    expect(out.globalCaps[0]!.limit).toBe(500); // not measured: the equal share
    expect(out.version).toBe(doc.version);
    expect(applyDegradedShares(doc, null)).toBe(doc);
    expect(sharedLimitNames(doc)).toEqual(new Map([[shared!.id, shared!.name], [cap.id, "global-orders"]]));
  });

  it("never enforces less than 1 nor more than the limit", () => {
    expect(degradedLimit(100, 0.9)).toBe(90);
    expect(degradedLimit(3, 0.01)).toBe(1);
    expect(degradedLimit(10, 1)).toBe(10);
  });
});
