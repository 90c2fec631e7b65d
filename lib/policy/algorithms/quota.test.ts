import { describe, expect, it } from "vitest";
import { quotaPeriod } from "../quota-period";
import { quota } from "./quota";
import { limitOf } from "../testing/limits";

describe("quota periods (UTC calendar)", () => {
  it("months and days, leap years and year ends", () => {
    expect(quotaPeriod(Date.UTC(2028, 1, 29, 23, 59), "month")).toEqual({ startMs: Date.UTC(2028, 1, 1), endMs: Date.UTC(2028, 2, 1), label: "2028-02" });
    expect(quotaPeriod(Date.UTC(2026, 11, 31, 23, 59, 59, 999), "month")).toMatchObject({ endMs: Date.UTC(2027, 0, 1), label: "2026-12" });
    expect(quotaPeriod(Date.UTC(2026, 11, 31, 23, 59, 59, 999), "day")).toEqual({ startMs: Date.UTC(2026, 11, 31), endMs: Date.UTC(2027, 0, 1), label: "2026-12-31" });
    for (let d = Date.UTC(1999, 0, 1); d < Date.UTC(2101, 0, 1); d += 86_400_000 * 17 + 3_600_000) {
      const when = new Date(d);
      const p = quotaPeriod(d, "month");
      expect(p.startMs).toBe(Date.UTC(when.getUTCFullYear(), when.getUTCMonth(), 1));
      expect(p.endMs).toBe(Date.UTC(when.getUTCFullYear(), when.getUTCMonth() + 1, 1));
    }
  });
});

describe("quota (pure)", () => {
  it("block: denies when spent until the next period; bill: passes and reports overage", () => {
    const block = limitOf({ limit: 2, period: "day", overage: "block" });
    const a = quota(undefined, block, { nowMs: Date.UTC(2026, 5, 1, 10), cost: 2 });
    const b = quota(a.nextState, block, { nowMs: Date.UTC(2026, 5, 1, 23), cost: 1 });
    expect(b.outcome).toMatchObject({ allowed: false, reason: "quota_exhausted", retryAfterMs: 3_600_000 });
    expect(quota(a.nextState, block, { nowMs: Date.UTC(2026, 5, 2), cost: 2 }).outcome.allowed).toBe(true);
    const bill = limitOf({ limit: 2, period: "month", overage: "bill" });
    const c = quota(a.nextState, bill, { nowMs: Date.UTC(2026, 5, 1, 11), cost: 3 });
    expect(c.outcome).toMatchObject({ allowed: true, overage: 3, remaining: 0 });
  });
});
