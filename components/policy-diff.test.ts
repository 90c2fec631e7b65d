import { describe, expect, it } from "vitest";
import { compilePolicy, type PolicySpec } from "@/lib/policy/compile";
import { diffPolicies } from "./policy-diff";

const base: PolicySpec = {
  version: 1,
  defaults: { failureMode: "open" },
  operations: [{ name: "orders-read", match: ["GET /v1/orders/*"], cost: 1 }],
  tiers: [{ name: "free", weight: 1, limits: [{ operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 100, window: "1m", mode: "reject" }], quotas: [] }],
  globalCaps: [],
  tenants: [{ slug: "acme", name: "Acme", tier: "free", status: "active", overrides: [] }],
};

describe("the draft-vs-live diff in words", () => {
  it("is empty when nothing changed", () => {
    expect(diffPolicies(compilePolicy(base), compilePolicy(base))).toEqual([]);
  });
  it("names a changed limit with before and after, and a moved tenant", () => {
    const draft = structuredClone(base);
    draft.tiers[0].limits[0].limit = 50;
    draft.tiers.push({ name: "pro", weight: 5, limits: [], quotas: [] });
    draft.tenants[0].tier = "pro";
    const lines = diffPolicies(compilePolicy(base), compilePolicy(draft));
    expect(lines).toContainEqual({ kind: "changed", entity: "limit", text: "free: * per api_key — sliding_window_counter 100 per 1m → sliding_window_counter 50 per 1m" });
    expect(lines).toContainEqual({ kind: "added", entity: "tier", text: "Tier pro added (weight 5, 0 limit(s), 0 quota(s))" });
    expect(lines).toContainEqual({ kind: "changed", entity: "tenant", text: "Tenant acme: tier free → pro" });
  });
  it("names an override by the cell it replaces, with its values and expiry", () => {
    const draft = structuredClone(base);
    draft.tenants[0].overrides.push({ operation: "*", scope: "api_key", limit: 500, expiresAt: "2027-01-01T00:00:00Z" });
    const added = diffPolicies(compilePolicy(base), compilePolicy(draft));
    expect(added).toEqual([{ kind: "added", entity: "override", text: "Tenant acme: override of * per api_key — sliding_window_counter 500 per 1m until 2027-01-01 00:00Z" }]);
    const raised = structuredClone(draft);
    raised.tenants[0].overrides[0].limit = 900;
    expect(diffPolicies(compilePolicy(draft), compilePolicy(raised))).toEqual([
      { kind: "changed", entity: "override", text: "Tenant acme: override of * per api_key — sliding_window_counter 500 per 1m until 2027-01-01 00:00Z → sliding_window_counter 900 per 1m until 2027-01-01 00:00Z" },
    ]);
    expect(diffPolicies(compilePolicy(raised), compilePolicy(base))[0]).toMatchObject({ kind: "removed", entity: "override" });
  });
  it("reports everything as added before the first publish", () => {
    const lines = diffPolicies(null, compilePolicy(base));
    expect(lines.every((l) => l.kind === "added")).toBe(true);
    expect(lines.length).toBe(4);
  });
});

describe("billing in the diff (issue #26)", () => {
  it("shows a billing change, new thresholds and what a tier change mid-period does to quotas, before publish", () => {
    const draft = structuredClone(base);
    draft.tiers.push({ name: "pro", weight: 5, limits: [], quotas: [], thresholds: [50] });
    draft.tenants[0] = { ...draft.tenants[0], tier: "pro", billing: { anchor: "2026-03-15", timeZone: "America/Los_Angeles" }, thresholds: [90] };
    draft.defaults = { failureMode: "open", planChange: "prorate" };
    const lines = diffPolicies(compilePolicy(base), compilePolicy(draft)).map((l) => l.text);
    expect(lines).toContain("Plan changes mid-period full → prorate (usage so far kept, the new tier's quota scaled to the rest of the period)");
    expect(lines).toContain(
      "Tenant acme: tier free → pro, billing UTC calendar month → anchor 2026-03-15 (America/Los_Angeles), a new period from publish, notification thresholds default (80%, 100%) → 90%",
    );
    expect(lines).toContain("Tenant acme: quotas from publish to the period's end (prorate): usage so far kept, the new tier's quota scaled to the rest of the period");
  });
});
