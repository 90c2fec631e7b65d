import { describe, expect, it } from "vitest";
import { compilePolicy, type PolicySpec } from "./compile";
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

describe("the diff names changed Envoy rules", () => {
  const envoy = (perDay: number, extra: object = {}) => ({
    ...base,
    rateLimitService: {
      unknownDomain: "ok" as const,
      shadowMode: false,
      domains: [
        {
          domain: "messaging",
          descriptors: [
            { key: "message_type", value: "marketing", descriptors: [{ key: "to_number", rate_limit: { unit: "day", requests_per_unit: 5 } }] },
            { key: "to_number", rate_limit: { unit: "day", requests_per_unit: perDay }, ...extra },
          ],
        },
      ],
    },
  });

  it("a new domain is one line; a changed rule says before and after; a removed domain is one line", () => {
    expect(diffPolicies(compilePolicy(base), compilePolicy(envoy(100)))).toEqual([{ kind: "added", entity: "envoy domain", text: "Envoy domain messaging added (2 rule(s))" }]);
    expect(diffPolicies(compilePolicy(envoy(100)), compilePolicy(envoy(200, { shadow_mode: true })))).toEqual([
      { kind: "changed", entity: "envoy rule", text: "Envoy messaging: to_number — 100 per day, each value apart → 200 per day, each value apart, shadow" },
    ]);
    expect(diffPolicies(compilePolicy(envoy(100)), compilePolicy(base))).toEqual([{ kind: "removed", entity: "envoy domain", text: "Envoy domain messaging removed" }]);
  });

  it("names a nested rule by its path, and a setting by its name", () => {
    const before = envoy(100);
    const after = structuredClone(before);
    after.rateLimitService.domains[0]!.descriptors[0]!.descriptors![0]!.rate_limit!.requests_per_unit = 7;
    (after.rateLimitService as { unknownDomain: string }).unknownDomain = "error";
    expect(diffPolicies(compilePolicy(before), compilePolicy(after))).toEqual([
      { kind: "changed", entity: "envoy setting", text: "Envoy: unknown domains answer ok → error" },
      { kind: "changed", entity: "envoy rule", text: "Envoy messaging: message_type=marketing › to_number — 5 per day, each value apart → 7 per day, each value apart" },
    ]);
  });
});
