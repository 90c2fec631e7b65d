import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { limitOf } from "./testing/limits";
import { fairShare, type FairShareState } from "./fair-share";

const WINDOW = 1_000;
const cap = limitOf({ limit: 60, windowMs: WINDOW });

/** Replays arrivals (tenant index per request, spread evenly over each window); admitted per window per tenant. */
function run(weights: number[], windows: number[][], limit = cap) {
  let state: FairShareState | undefined;
  return windows.map((arrivals, w) => {
    const admitted = weights.map(() => 0);
    arrivals.forEach((tenant, n) => {
      const nowMs = w * WINDOW + Math.floor((n * WINDOW) / arrivals.length);
      const r = fairShare(state, limit, { nowMs, cost: 1, member: `t${tenant}`, weight: weights[tenant] });
      state = r.outcome.allowed ? r.nextState : r.activityState;
      if (r.outcome.allowed) admitted[tenant]++;
    });
    return admitted;
  });
}

const flood = (tenants: number[], perTenant: number) => {
  const out: number[] = [];
  for (let i = 0; i < perTenant; i++) out.push(...tenants);
  return out;
};

describe("weighted fair share of a global cap", () => {
  it("a tenant alone may use the whole cap", () => {
    expect(run([1], [flood([0], 100), flood([0], 100)])).toEqual([[60], [60]]);
  });

  it("under contention, tiers free (1), pro (3) and enterprise (8) each get at least their weight's share", () => {
    // Tenants: three free, two pro, one enterprise: weights sum to 3 + 6 + 8 = 17.
    const weights = [1, 1, 1, 3, 3, 8];
    // The free tenants flood first in every window (worst case for the others), then everybody.
    const window = [...flood([0, 1, 2], 100), ...flood([0, 1, 2, 3, 4, 5], 100)];
    const [, second, third] = run(weights, [window, window, window]);
    for (const admitted of [second, third]) {
      weights.forEach((w, t) => expect(admitted[t], `tenant ${t}`).toBeGreaterThanOrEqual(Math.floor((60 * w) / 17)));
      expect(admitted.reduce((a, b) => a + b)).toBeLessThanOrEqual(60);
      // A tier gets its weight's share up to rounding: one unit per tenant at most (3.5 → 3 each).
      const tier = (ts: number[]) => ts.reduce((s, t) => s + admitted[t], 0);
      expect(tier([0, 1, 2])).toBeGreaterThanOrEqual(Math.floor((60 * 3) / 17) - 3 + 2);
      expect(tier([3, 4])).toBeGreaterThanOrEqual(Math.floor((60 * 6) / 17) - 1);
      expect(tier([5])).toBeGreaterThanOrEqual(Math.floor((60 * 8) / 17));
    }
  });

  it("no tenant can take the whole cap from an active other, even the heaviest flooding first", () => {
    const [, second] = run([100, 1], [[...flood([0], 500), 1], [...flood([0], 500), ...flood([1], 10)]]);
    expect(second[0]).toBeLessThan(60);
    expect(second[1]).toBeGreaterThanOrEqual(Math.floor(60 / 101));
  });

  it("property: every tenant active since the last window gets ⌊limit × w / Σw⌋ whenever it asks for that much", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 10 }), { minLength: 2, maxLength: 6 }),
        fc.integer({ min: 5, max: 200 }),
        fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 50, maxLength: 600 }),
        (weights, limit, order) => {
          const arrivals = order.map((t) => t % weights.length);
          const everyone = weights.map((_, t) => t);
          // Window 0 makes everybody active; window 1 is the random interleaving.
          const [, admitted] = run(weights, [everyone, [...arrivals, ...flood(everyone, limit)]], limitOf({ limit, windowMs: WINDOW }));
          const total = weights.reduce((a, b) => a + b);
          expect(admitted.reduce((a, b) => a + b)).toBeLessThanOrEqual(limit);
          weights.forEach((w, t) => expect(admitted[t]).toBeGreaterThanOrEqual(Math.floor((limit * w) / total)));
        },
      ),
      { numRuns: 300 },
    );
  });
});
