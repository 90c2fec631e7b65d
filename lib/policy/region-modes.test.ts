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

  it("names the path of an unknown value, and refuses shared as not yet supported", () => {
    expect(issues(file({ regions: "global" }))).toEqual(["tiers[0].limits[0].regions: expected local, split, shared"]);
    expect(issues(file({}, { regions: "everywhere" }))).toEqual(["globalCaps[0].regions: expected local, split, shared"]);
    expect(issues(file({ regions: "shared" }))).toEqual(["tiers[0].limits[0].regions: shared is not yet supported (docs/regions.md): use local or split"]);
    expect(issues(file({}, { regions: "shared" }))).toEqual(["globalCaps[0].regions: shared is not yet supported (docs/regions.md): use local or split"]);
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
