import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { planCapacity, checkCapacityInput } from "./capacity";
import { fairShare, type FairShareState } from "./fair-share";

describe("capacity for a global cap", () => {
  it("turns downstream capacity and target utilisation into the cap per window", () => {
    const plan = planCapacity({ capacityPerSecond: 200, utilisation: 0.7, windowMs: 60_000, tiers: [] });
    expect(plan.cap).toBe(8_400); // 200/s × 0.7 × 60 s
    expect(planCapacity({ capacityPerSecond: 10, utilisation: 1, windowMs: 500, tiers: [] }).cap).toBe(5);
  });

  it("gives each tier its tenants' weighted guarantees when everyone contends, and one tenant per tier's", () => {
    const plan = planCapacity({
      capacityPerSecond: 100,
      utilisation: 0.5,
      windowMs: 60_000,
      tiers: [
        { name: "free", weight: 1, tenants: 6 },
        { name: "pro", weight: 4, tenants: 3 },
        { name: "enterprise", weight: 16, tenants: 2 },
      ],
    });
    // cap 3,000; W = 6·1 + 3·4 + 2·16 = 50 → per tenant 60, 240, 960
    expect(plan.cap).toBe(3_000);
    expect(plan.tiers.map((t) => [t.tier, t.perTenant, t.tierTotal])).toEqual([["free", 60, 360], ["pro", 240, 720], ["enterprise", 960, 1_920]]);
    expect(plan.unallocated).toBe(0);
    // one tenant per tier: W = 21 → 142, 571, 2285
    expect(plan.tiers.map((t) => t.alonePerTier)).toEqual([142, 571, 2_285]);
  });

  it("promises only what the fair share really delivers: every tenant contending gets at least its guarantee", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.array(fc.record({ weight: fc.integer({ min: 1, max: 20 }), tenants: fc.integer({ min: 0, max: 4 }) }), { minLength: 1, maxLength: 4 }),
        (cap, tierList) => {
          const tiers = tierList.map((t, i) => ({ name: `t${i}`, ...t }));
          const plan = planCapacity({ capacityPerSecond: cap, utilisation: 1, windowMs: 1_000, tiers });
          const members = tiers.flatMap((t) => Array.from({ length: t.tenants }, (_, j) => ({ member: `${t.name}-${j}`, tier: t.name, weight: t.weight })));
          if (members.length === 0) return;
          const limit = { limit: plan.cap, windowMs: 1_000, burst: plan.cap, precision: 1, mode: "reject" as const, maxDelayMs: 0, leaseTtlMs: 0 };
          let state: FairShareState | undefined;
          // window 0: everyone asks once, so all are active in window 1; window 1: everyone greedy, round-robin
          for (const m of members) state = fairShare(state, limit, { nowMs: 10, cost: 1, member: m.member, weight: m.weight }).activityState;
          const got = new Map(members.map((m) => [m.member, 0]));
          for (let round = 0; round <= plan.cap; round++) {
            for (const m of members) {
              const r = fairShare(state, limit, { nowMs: 1_010, cost: 1, member: m.member, weight: m.weight });
              if (r.outcome.allowed) {
                state = r.nextState;
                got.set(m.member, got.get(m.member)! + 1);
              } else state = r.activityState;
            }
          }
          for (const m of members) expect(got.get(m.member)!).toBeGreaterThanOrEqual(plan.tiers.find((t) => t.tier === m.tier)!.perTenant);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("refuses inputs that plan nothing, naming the field", () => {
    expect(checkCapacityInput({ capacityPerSecond: 0, utilisation: 0.5, windowMs: 1000, tiers: [] })?.field).toBe("capacityPerSecond");
    expect(checkCapacityInput({ capacityPerSecond: 10, utilisation: 1.5, windowMs: 1000, tiers: [] })?.field).toBe("utilisation");
    expect(checkCapacityInput({ capacityPerSecond: 10, utilisation: 0.5, windowMs: 1000, tiers: [] })).toBeNull();
  });
});
