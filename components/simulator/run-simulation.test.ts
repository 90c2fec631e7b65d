import { describe, expect, it } from "vitest";
import { compilePolicy, type PolicySpec } from "@/lib/policy/compile";
import { arrivals, runSimulation } from "./run-simulation";

const spec: PolicySpec = {
  version: 1,
  defaults: { failureMode: "open" },
  operations: [{ name: "orders-read", match: ["GET /v1/orders/*"], cost: 1 }],
  tiers: [
    { name: "free", weight: 1, limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 100, window: "1m", mode: "reject" }], quotas: [] },
    { name: "pro", weight: 5, limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 1000, window: "1m", mode: "reject" }], quotas: [] },
  ],
  globalCaps: [],
  tenants: [
    { slug: "acme", name: "Acme", tier: "free", status: "active", overrides: [] },
    { slug: "gone", name: "Gone", tier: "free", status: "suspended", overrides: [] },
  ],
};
const doc = compilePolicy(spec);
// Aligned to a minute so the fixed window starts with the simulation.
const startMs = Date.UTC(2026, 11, 2, 12, 0, 0);
const traffic = { ratePerSecond: 5, burstEverySeconds: 0, burstSize: 0, keys: 1, ips: 1, durationSeconds: 60, cost: 1 };

describe("the simulator runs the decision code over synthetic traffic", () => {
  it("lets exactly 100 requests of one key through a 100/min limit, then answers 429 with an honest Retry-After", async () => {
    const r = await runSimulation(doc, { kind: "tenant", name: "acme" }, ["orders-read"], traffic, { startMs, policyVersion: 1 });
    expect(r.total).toBe(300);
    expect(r.allowed).toBe(100);
    expect(r.denied).toBe(200);
    expect(r.firstDenialSeconds).toBe(20);
    // Denied at second 20 of a window that resets at 60.
    expect(r.firstRetryAfterSeconds).toBe(40);
    expect(r.share429).toBeCloseTo(2 / 3);
    // Each 429 names the limit that denied it, as the decision server's usage records it.
    expect(r.reasons).toEqual({ "rate_limited by free-api_key": 200 });
  });
  it("spreads load over keys: two keys get twice the api_key budget", async () => {
    const r = await runSimulation(doc, { kind: "tenant", name: "acme" }, [], { ...traffic, keys: 2 }, { startMs, policyVersion: 1 });
    expect(r.allowed).toBe(200);
  });
  it("simulates a tier through a synthetic tenant on it", async () => {
    const r = await runSimulation(doc, { kind: "tier", name: "pro" }, [], traffic, { startMs, policyVersion: 1 });
    expect(r.denied).toBe(0);
  });
  it("answers 403 for every request of a suspended tenant", async () => {
    const r = await runSimulation(doc, { kind: "tenant", name: "gone" }, [], traffic, { startMs, policyVersion: 1 });
    expect(r.reasons).toEqual({ tenant_suspended: 300 });
    expect(r.share429).toBe(0);
  });
  it("says when the subject is missing from a version", async () => {
    const r = await runSimulation(doc, { kind: "tier", name: "enterprise" }, [], traffic, { startMs, policyVersion: 1 });
    expect(r.missing).toBe("tier enterprise is not in this version");
  });
  it("adds bursts on top of the steady rate", () => {
    expect(arrivals({ ...traffic, ratePerSecond: 0, burstEverySeconds: 10, burstSize: 3, durationSeconds: 30 })).toEqual([0, 0, 0, 10000, 10000, 10000, 20000, 20000, 20000]);
  });
});
