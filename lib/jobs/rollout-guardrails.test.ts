import { describe, expect, it } from "vitest";
import { DEFAULT_GUARDRAILS } from "../policy/rollout";
import { judgeGuardrails, trippedTenants, type SystemFigures } from "./rollout-guardrails";

const quiet: SystemFigures = { errors: 0, breaker: 0, decisions: 1_000, rejectLatency: [] };
const g = DEFAULT_GUARDRAILS;
const figures = (m: Record<string, [number, number]>) => new Map(Object.entries(m).map(([t, [total, denied]]) => [t, { total, denied }]));

describe("a single tenant's guardrail", () => {
  it("trips on a tenant whose 429 share jumps more than the allowed points above its own before the rollout", () => {
    const now = figures({ acme: [100, 30], globex: [1_000, 0], initech: [100, 40] });
    // initech was already at 35% before: +5 points is no jump.
    const before = figures({ acme: [600, 12], initech: [600, 210] });
    expect(trippedTenants(now, before, 0.01, g)).toEqual([{ tenant: "acme", share: 0.3, before: 0.02, jumpPoints: expect.closeTo(28, 5) }]);
  });

  it("measures a tenant without traffic before against the control, and ignores one with too few decisions", () => {
    expect(trippedTenants(figures({ acme: [50, 15] }), new Map(), 0.05, g).map((t) => t.tenant)).toEqual(["acme"]);
    expect(trippedTenants(figures({ acme: [9, 9] }), new Map(), 0, g)).toEqual([]);
    expect(trippedTenants(figures({ acme: [50, 15] }), new Map(), 0.05, { ...g, maxTenantDenyShareIncrease: 30 })).toEqual([]);
  });

  it("names the tenants in the breach, even when the cohort as a whole holds", () => {
    const breaches = judgeGuardrails({ perTenant: figures({ acme: [100, 30], globex: [1_000, 0] }), baseline: new Map(), controlShare: 0.01, system: quiet, guardrails: g, requiredRejectP95Ms: null });
    expect(breaches).toEqual([{ guardrail: "tenant_429_share", tenants: ["acme"], message: expect.stringContaining("acme 30.0% (before 1.0%, +29.0 points)") }]);
  });
});

describe("the store-error and reject-latency guardrails", () => {
  it("breach as the redis_errors alert does: 1% of decisions, or any breaker opening", () => {
    const judge = (system: SystemFigures, guardrails = g) => judgeGuardrails({ perTenant: new Map(), baseline: new Map(), controlShare: 0, system, guardrails, requiredRejectP95Ms: null });
    expect(judge({ ...quiet, errors: 9 })).toEqual([]);
    expect(judge({ ...quiet, errors: 10 })[0]).toMatchObject({ guardrail: "store_errors" });
    expect(judge({ ...quiet, breaker: 1 })[0]).toMatchObject({ guardrail: "store_errors" });
    expect(judge({ ...quiet, breaker: 1 }, { ...g, storeErrors: false })).toEqual([]);
  });

  it("breach when the reject path's p95 is above the rollout's limit, else the policy's rejectP95, else 50 ms", () => {
    // 100 denied decisions, 96 of them in the 100 ms bucket (index 8): p95 = 100 ms.
    const slow: SystemFigures = { ...quiet, rejectLatency: [4, 0, 0, 0, 0, 0, 0, 0, 96] };
    const judge = (guardrails = g, requiredRejectP95Ms: number | null = null) => judgeGuardrails({ perTenant: new Map(), baseline: new Map(), controlShare: 0, system: slow, guardrails, requiredRejectP95Ms });
    expect(judge()[0]).toMatchObject({ guardrail: "reject_latency", message: "reject-path p95 at most 50 ms: 100 ms over 100 denied decisions" });
    expect(judge(g, 250)).toEqual([]);
    expect(judge({ ...g, maxRejectP95Ms: 100 })).toEqual([]);
    expect(judgeGuardrails({ perTenant: new Map(), baseline: new Map(), controlShare: 0, system: { ...quiet, rejectLatency: [0, 0, 0, 0, 0, 0, 0, 0, 9] }, guardrails: g, requiredRejectP95Ms: null })).toEqual([]);
  });
});
