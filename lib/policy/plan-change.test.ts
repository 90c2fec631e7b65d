import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { carriedQuota, quotaAllowance, type CompiledPlanChange } from "./plan-change";

const DAY = 86_400_000;
const period = { startMs: 0, endMs: 30 * DAY };

describe("plan changes mid-period", () => {
  it("full: the new quota for the whole period, usage carried over", () => {
    expect(quotaAllowance({ limit: 10_000, rule: "full", period, changeAtMs: 9 * DAY, usedBefore: 700 })).toEqual({ periodLimit: 10_000, counterLimit: 9_300, usedBefore: 700 });
    // Used more than the new quota already: nothing left, never negative.
    expect(quotaAllowance({ limit: 500, rule: "full", period, changeAtMs: 9 * DAY, usedBefore: 700 }).counterLimit).toBe(0);
  });

  it("prorate: the new quota times the share of the period left (a change on day 10 of 30 leaves 2/3)", () => {
    expect(quotaAllowance({ limit: 9_000, rule: "prorate", period, changeAtMs: 10 * DAY, usedBefore: 700 })).toEqual({ periodLimit: 6_700, counterLimit: 6_000, usedBefore: 700 });
    expect(quotaAllowance({ limit: 10, rule: "prorate", period, changeAtMs: 10 * DAY, usedBefore: 0 }).counterLimit).toBe(6); // ⌊6.67⌋
  });

  it("a change outside the period leaves the plain quota", () => {
    for (const changeAtMs of [null, -DAY, 0, 30 * DAY, 40 * DAY]) {
      expect(quotaAllowance({ limit: 100, rule: "prorate", period, changeAtMs, usedBefore: 50 })).toEqual({ periodLimit: 100, counterLimit: 100, usedBefore: 0 });
    }
  });

  it("properties: never negative, never above the new quota, prorate shrinks as the period runs out", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e12 }), fc.integer({ min: 1, max: 30 * DAY - 1 }), fc.integer({ min: 0, max: 1e12 }), (limit, at, used) => {
        const full = quotaAllowance({ limit, rule: "full", period, changeAtMs: at, usedBefore: used });
        const pro = quotaAllowance({ limit, rule: "prorate", period, changeAtMs: at, usedBefore: used });
        expect(full.counterLimit + Math.min(used, limit)).toBe(limit);
        expect(pro.counterLimit).toBeGreaterThanOrEqual(0);
        expect(pro.counterLimit).toBeLessThanOrEqual(limit);
        expect(quotaAllowance({ limit, rule: "prorate", period, changeAtMs: Math.min(at + DAY, 30 * DAY - 1), usedBefore: used }).counterLimit).toBeLessThanOrEqual(pro.counterLimit);
      }),
    );
  });

  it("carries the old quota of the same operation and period only", () => {
    const change: CompiledPlanChange = { atMs: 1, fromTier: "free", rule: "full", quotas: [{ quotaId: "q-old", operation: "*", period: "month", limit: 1000 }] };
    expect(carriedQuota(change, "*", "month")?.quotaId).toBe("q-old");
    expect(carriedQuota(change, "*", "day")).toBeNull();
    expect(carriedQuota(null, "*", "month")).toBeNull();
  });
});
