import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cohortHash, cohortMembers, DEFAULT_CANARY_BAKE_MS, planRollout, rolloutSpecSchema, splitSteps } from "./rollout";

const PINNED_ACME = 624294919;
const PINNED_EMPTY = 91794203;
const tenants = Array.from({ length: 1000 }, (_, i) => `tenant-${String(i).padStart(4, "0")}`);

describe("cohortHash and cohortMembers", () => {
  it("is stable: the same tenant and rollout give the same hash in any order, and the cohort does not depend on the list's order", () => {
    const first = tenants.map((t) => cohortHash("ro_abc", t));
    const again = [...tenants].reverse().map((t) => cohortHash("ro_abc", t)).reverse();
    expect(again).toEqual(first);
    // Pinned: changing the function would move tenants between versions mid-rollout across a fleet
    // running two builds.
    expect([cohortHash("ro_abc", "acme"), cohortHash("", "")]).toEqual([PINNED_ACME, PINNED_EMPTY]);
    const cohort = { salt: "ro_abc", canaries: [], percent: 10 };
    expect([...cohortMembers(cohort, [...tenants].reverse())].sort()).toEqual([...cohortMembers(cohort, tenants)].sort());
    fc.assert(
      fc.property(fc.string(), fc.string(), (salt, tenant) => {
        const h = cohortHash(salt, tenant);
        return Number.isInteger(h) && h >= 0 && h < 2 ** 32 && h === cohortHash(salt, tenant);
      }),
    );
  });

  it("puts exactly 10% of 1,000 similar slugs in a 10% cohort, for any rollout id", () => {
    for (const salt of ["ro_1", "ro_2", "ro_xyz", "ro_2026-12-07"]) {
      expect(cohortMembers({ salt, canaries: [], percent: 10 }, tenants).size).toBe(100);
      expect(cohortMembers({ salt, canaries: [], percent: 2.5 }, tenants).size).toBe(25);
    }
  });

  it("spreads hashes evenly (chi-square over 10 bins below the 99.9% bound), and each rollout picks its own cohort", () => {
    for (const salt of ["ro_even", "ro_odd", "ro_3"]) {
      const counts = new Array<number>(10).fill(0);
      for (const t of tenants) counts[Math.floor((cohortHash(salt, t) / 2 ** 32) * 10)]! += 1;
      const chi2 = counts.reduce((sum, c) => sum + (c - 100) ** 2 / 100, 0);
      expect(chi2).toBeLessThan(27.88);
    }
    const a = cohortMembers({ salt: "ro_a", canaries: [], percent: 10 }, tenants);
    const b = cohortMembers({ salt: "ro_b", canaries: [], percent: 10 }, tenants);
    expect([...a].filter((t) => b.has(t)).length).toBeLessThan(40);
  });

  it("keeps a tenant in the cohort at every later step (cohorts only grow), and 100% is everyone", () => {
    let previous = new Set<string>();
    for (const percent of [1, 5, 10, 25, 50, 100]) {
      const members = cohortMembers({ salt: "ro_grow", canaries: [], percent }, tenants);
      for (const t of previous) expect(members.has(t)).toBe(true);
      previous = members;
    }
    expect(previous.size).toBe(tenants.length);
  });

  it("puts canaries in at every step, and nobody else at 0%", () => {
    expect([...cohortMembers({ salt: "ro_c", canaries: ["tenant-0007"], percent: 0 }, tenants)]).toEqual(["tenant-0007"]);
    expect(cohortMembers({ salt: "ro_c", canaries: ["tenant-0007"], percent: 10 }, tenants).has("tenant-0007")).toBe(true);
  });
});

describe("rolloutSpecSchema", () => {
  const issues = (input: unknown) => {
    const r = rolloutSpecSchema.safeParse(input);
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  };

  it("plans canaries first, then each step with its bake time", () => {
    const plan = planRollout(rolloutSpecSchema.parse({ canaries: ["a", "b"], steps: splitSteps("10%:1h, 100%") }));
    expect(plan.steps).toEqual([
      { percent: 0, bakeMs: DEFAULT_CANARY_BAKE_MS },
      { percent: 10, bakeMs: 3_600_000 },
      { percent: 100, bakeMs: 0 },
    ]);
    expect(plan.guardrails).toEqual({ maxDenyShareIncrease: 5, maxTenantDenyShareIncrease: 20, storeErrors: true, maxRejectP95Ms: null, pauseOnly: false, minDecisions: 10 });
    const objects = planRollout(rolloutSpecSchema.parse({ steps: [{ percent: 5, bake: "15m" }, { percent: 100 }], guardrails: { maxDenyShareIncrease: 2, pauseOnly: true } }));
    expect(objects.steps).toEqual([
      { percent: 5, bakeMs: 900_000 },
      { percent: 100, bakeMs: 0 },
    ]);
    expect(objects.guardrails).toEqual({ maxDenyShareIncrease: 2, maxTenantDenyShareIncrease: 20, storeErrors: true, maxRejectP95Ms: null, pauseOnly: true, minDecisions: 10 });
    const strict = planRollout(rolloutSpecSchema.parse({ steps: ["100%"], guardrails: { maxTenantDenyShareIncrease: 10, storeErrors: false, maxRejectP95: "25ms" } }));
    expect(strict.guardrails).toMatchObject({ maxTenantDenyShareIncrease: 10, storeErrors: false, maxRejectP95Ms: 25 });
  });

  it("names the step that is wrong", () => {
    expect(issues({ steps: ["10%:1h", "50%:1h"] })).toEqual(["steps.1: the last step must be 100%, got 50%"]);
    expect(issues({ steps: ["10%:1h", "5%:1h", "100%"] })).toEqual(["steps.1: percentages must increase: 5% after 10%"]);
    expect(issues({ steps: ["150%:1h", "100%"] })[0]).toBe("steps.0: percentage must be above 0 and at most 100, got 150%");
    expect(issues({ steps: ["10%:soon", "100%"] })[0]).toContain('steps.0: bake time: expected a duration like 30s, 15m, 1h or 2d, got "soon"');
    expect(issues({ steps: ["ten", "100%"] })[0]).toContain("steps.0: expected <percent>%[:<bake time>]");
    expect(issues({ steps: ["10%", "100%"] })).toEqual(["steps.0: a step before the last needs a bake time, like 10%:1h"]);
    expect(issues({ canaries: ["a", "a"], steps: ["100%"] })).toEqual(['canaries.1: duplicate tenant "a"']);
    expect(issues({ steps: [] })).toEqual(["steps: expected at least one step, ending at 100%"]);
    expect(issues({ steps: ["100%"], canaryBake: "later" })[0]).toContain("canaryBake: expected a duration");
    expect(issues({ steps: ["100%"], extra: 1 })[0]).toContain("extra");
    expect(issues({ steps: ["100%"], guardrails: { maxTenantDenyShareIncrease: 0 } })).toEqual(["guardrails.maxTenantDenyShareIncrease: expected percentage points > 0"]);
    expect(issues({ steps: ["100%"], guardrails: { maxRejectP95: "fast" } })).toEqual(['guardrails.maxRejectP95: expected a duration like 50ms or 1s, got "fast"']);
  });
});
