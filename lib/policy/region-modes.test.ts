/**
 * `regions: local | split | shared` on limits and global caps (docs/regions.md, docs/policy-file.md):
 * validated with the path named, carried in the compiled document only when not `local` (so every
 * document from before regions keeps its checksum), inherited by a tenant's override, exported, and
 * shown in the publish diff.
 */
import { describe, expect, it } from "vitest";
import { diffPolicies } from "@/lib/policy/policy-diff";
import { compilePolicy, finalizePolicy, policyChecksum, type PolicySpec } from "./compile";
import { parseCompiledPolicy } from "./compiled-schema";
import { specFromDocument } from "./decompile";
import { formatIssue, parsePolicyFile } from "./policy-file";

const file = (limitExtra: Record<string, unknown> = {}, capExtra: Record<string, unknown> = {}) => ({
  version: 1,
  operations: [{ name: "orders", match: ["GET /v1/orders"] }],
  tiers: [{ name: "free", limits: [{ operation: "*", scope: "tenant", algorithm: "fixed_window", limit: 1000, window: "1m", ...limitExtra }] }],
  globalCaps: [{ operation: "orders", limit: 50, window: "1m", ...capExtra }],
  tenants: [{ slug: "acme", name: "Acme", tier: "free", overrides: [{ operation: "*", scope: "tenant", limit: 5000 }] }],
});

function spec(input: unknown): PolicySpec {
  const parsed = parsePolicyFile(input);
  if (!parsed.ok) throw new Error(parsed.issues.map(formatIssue).join("\n"));
  return parsed.value;
}

const issues = (input: unknown) => {
  const parsed = parsePolicyFile(input);
  return parsed.ok ? [] : parsed.issues.map(formatIssue);
};

describe("regions on limits and global caps", () => {
  it("defaults to local, which the compiled document does not spell: the checksum of a policy without regions is unchanged", () => {
    const plain = compilePolicy(spec(file()));
    const explicit = compilePolicy(spec(file({ regions: "local" }, { regions: "local" })));
    expect(plain.tiers.free!.limits[0]).not.toHaveProperty("regions");
    expect(plain.globalCaps[0]).not.toHaveProperty("regions");
    expect(policyChecksum(explicit)).toBe(policyChecksum(plain));
  });

  it("carries split in the compiled document, which validates, and a tenant's override of a split limit is split too", () => {
    const doc = compilePolicy(spec(file({ regions: "split" }, { regions: "split" })));
    expect(doc.tiers.free!.limits[0]).toMatchObject({ limit: 1000, regions: "split" });
    expect(doc.globalCaps[0]).toMatchObject({ limit: 50, regions: "split" });
    const override = doc.tenants.acme!.overrides[0]!;
    expect(override.kind === "limit" && override.limit).toMatchObject({ limit: 5000, regions: "split" });
    expect(parseCompiledPolicy(JSON.stringify(finalizePolicy(doc, 1, "2026-12-07T00:00:00.000Z"))).ok).toBe(true);
  });

  it("names the path of an unknown value", () => {
    expect(issues(file({ regions: "global" }))).toEqual(["tiers[0].limits[0].regions: expected local, split, shared"]);
    expect(issues(file({}, { regions: "everywhere" }))).toEqual(["globalCaps[0].regions: expected local, split, shared"]);
  });

  it("accepts shared on fixed_window, sliding_window_counter and a global cap, and carries it into the compiled document and overrides", () => {
    expect(issues(file({ regions: "shared" }, { regions: "shared" }))).toEqual([]);
    expect(issues(file({ regions: "shared", algorithm: "sliding_window_counter", precision: 6 }))).toEqual([]);
    const doc = compilePolicy(spec(file({ regions: "shared" }, { regions: "shared" })));
    expect(doc.tiers.free!.limits[0]).toMatchObject({ regions: "shared" });
    expect(doc.globalCaps[0]).toMatchObject({ regions: "shared" });
    const override = doc.tenants.acme!.overrides[0]!;
    expect(override.kind === "limit" && override.limit).toMatchObject({ limit: 5000, regions: "shared" });
    expect(parseCompiledPolicy(JSON.stringify(finalizePolicy(doc, 1, "2026-12-07T00:00:00.000Z"))).ok).toBe(true);
  });

  it("refuses shared where counters do not simply add up, naming the field and why", () => {
    const why = "only fixed_window and sliding_window_counter count in windows another region's admissions can be added to (docs/regions.md)";
    expect(issues(file({ regions: "shared", algorithm: "token_bucket", burst: 10 }))).toEqual([`tiers[0].limits[0].regions: shared is not supported for algorithm token_bucket: ${why}`]);
    expect(issues(file({ regions: "shared", algorithm: "sliding_window_log" }))).toEqual([`tiers[0].limits[0].regions: shared is not supported for algorithm sliding_window_log: ${why}`]);
    expect(issues(file({ regions: "shared", algorithm: "concurrency", window: undefined }))).toEqual([`tiers[0].limits[0].regions: shared is not supported for algorithm concurrency: ${why}`]);
    expect(issues(file({}, { regions: "shared", share: "weighted" }))).toEqual([
      "globalCaps[0].regions: shared is not supported with share: weighted (each region's tenant activity is its own): use share: none, or regions: local or split",
    ]);
  });

  it("is written back by an export (the spec of a document) only where it is not local", () => {
    const back = specFromDocument(compilePolicy(spec(file({ regions: "split" }))));
    expect(back.tiers[0]!.limits[0]).toMatchObject({ regions: "split" });
    expect(back.globalCaps[0]).not.toHaveProperty("regions");
  });

  it("shows in the publish diff, on a limit and on a global cap", () => {
    const lines = diffPolicies(compilePolicy(spec(file())), compilePolicy(spec(file({ regions: "split" }, { regions: "split" }))));
    expect(lines).toContainEqual({ kind: "changed", entity: "limit", text: "free: * per tenant — fixed_window 1000 per 1m → fixed_window 1000 per 1m (regions split)" });
    expect(lines).toContainEqual({ kind: "changed", entity: "global cap", text: "Global cap on orders per 1m: 50 (none) → 50 (none, regions split)" });
  });
});
