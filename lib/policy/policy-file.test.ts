import { describe, expect, it } from "vitest";
import { parsePolicyFile, formatIssue } from "./policy-file";

const base = {
  version: 1,
  operations: [{ name: "orders-read", match: ["GET /v1/orders"] }],
  tiers: [{ name: "free", limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 10, window: "1m" }] }],
  tenants: [{ slug: "acme", name: "Acme", tier: "free", keys: [{ name: "ci" }] }],
};

describe("policy file: strict objects (no mass assignment)", () => {
  it.each([
    ["top level", { ...base, owner: "me" }, ""],
    ["an operation", { ...base, operations: [{ ...base.operations[0], admin: true }] }, "operations[0]"],
    ["a limit", { ...base, tiers: [{ ...base.tiers[0], limits: [{ ...base.tiers[0].limits[0], id: "x" }] }] }, "tiers[0].limits[0]"],
    ["a tenant", { ...base, tenants: [{ ...base.tenants[0], createdAt: "2020-01-01" }] }, "tenants[0]"],
    ["a key", { ...base, tenants: [{ ...base.tenants[0], keys: [{ name: "ci", hash: "00" }] }] }, "tenants[0].keys[0]"],
  ])("an unknown field in %s is an error naming its path, not silently dropped", (_where, file, path) => {
    const parsed = parsePolicyFile(file);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.issues).toHaveLength(1);
    expect(parsed.issues[0]!.path).toBe(path);
    expect(formatIssue(parsed.issues[0]!)).toMatch(/nrecognized key/);
  });

  it("accepts the same file without the extra field", () => {
    expect(parsePolicyFile(base).ok).toBe(true);
  });
});
