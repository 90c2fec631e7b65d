import { describe, expect, it } from "vitest";
import { planPolicy, type Draft } from "../lib/policy/plan";
import { formatPlan } from "./format-plan";

function draft(perDay: number, failureMode?: "closed"): Draft {
  const rate_limit = { unit: "day", requests_per_unit: perDay, ...(failureMode ? { failureMode } : {}) };
  const domains = [{ domain: "messaging", descriptors: [{ key: "to_number", rate_limit }] }];
  return { spec: { version: 1, defaults: { failureMode: "open" }, operations: [], tiers: [], globalCaps: [], tenants: [], rateLimitService: { unknownDomain: "ok", shadowMode: false, domains } }, keys: [] };
}

describe("the CLI's plan", () => {
  it("shows a changed Envoy domain rule by rule, failure modes included", () => {
    expect(formatPlan(planPolicy(draft(100), draft(200, "closed")))).toBe(
      "~ envoyDomain messaging:\n    changed Envoy messaging: to_number — 100 per day, each value apart → 200 per day, each value apart, failure mode closed\n0 to create, 1 to change, 0 to delete",
    );
  });
});
