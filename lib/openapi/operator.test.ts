/** What counts as a limited operation for `sluice openapi`, and the spec checks (pure, on compiled policies). */
import { describe, expect, it } from "vitest";
import { compileFixture } from "../decision/testing/fixture";
import { assertOpenApi3, mergeRateLimits, rateLimitOf } from "./operator";

const { doc: policy } = compileFixture({
  version: 1,
  defaults: { failureMode: "open" },
  operations: [
    { name: "watched", match: ["GET /v1/watched"] },
    { name: "billed", match: ["GET /v1/billed"] },
    { name: "capped", match: ["GET /v1/capped"] },
    { name: "free-for-all", match: ["GET /v1/open"] },
  ],
  tiers: [
    {
      name: "t",
      limits: [{ operation: "watched", scope: "tenant", algorithm: "fixed_window", limit: 5, window: "1m", mode: "shadow" }],
      quotas: [{ operation: "billed", period: "month", limit: 10, overage: "bill" }],
    },
  ],
  globalCaps: [{ operation: "capped", limit: 50, window: "1m", share: "weighted" }],
  tenants: [],
});

describe("rateLimitOf", () => {
  it("an operation is limited only by what can deny it: not by shadow limits or billed quotas alone", () => {
    expect(rateLimitOf(policy, "GET /v1/watched")).toBeNull();
    expect(rateLimitOf(policy, "GET /v1/billed")).toBeNull();
    expect(rateLimitOf(policy, "GET /v1/open")).toBeNull();
    expect(rateLimitOf(policy, "GET /v1/capped")).toMatchObject({ operation: "capped", globalCaps: [{ limit: 50, window: "1m", share: "weighted" }], tiers: {} });
  });

  it("a spec whose operations nothing limits is returned as it was", () => {
    const spec = { openapi: "3.0.3", info: { title: "x", version: "1" }, paths: { "/v1/open": { get: { responses: { 200: { description: "ok" } } } } } };
    expect(mergeRateLimits(policy, spec)).toEqual({ doc: spec, limited: 0 });
  });

  it("refuses what is not an OpenAPI 3 document, naming the field", () => {
    expect(() => assertOpenApi3([])).toThrow("expected an OpenAPI document (an object)");
    expect(() => assertOpenApi3({ openapi: 3.1 })).toThrow('openapi: expected an OpenAPI 3.x version like "3.1.0", got 3.1');
    expect(() => mergeRateLimits(policy, { openapi: "3.1.0", paths: { "/x": { get: "nope" } } })).toThrow("paths./x.get: expected an operation");
  });
});
