import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { compilePolicy, finalizePolicy, PolicyCompileError, policyChecksum, type PolicySpec } from "./compile";
import { limitsFor } from "./effective-limits";
import { parseCompiledPolicy } from "./compiled-schema";
import { resolveOperation } from "./match";
import { parsePolicyFile, type PolicyFile } from "./policy-file";

function demo(): PolicyFile {
  const text = readFileSync(path.resolve(import.meta.dirname, "../../examples/demo-policy.yaml"), "utf8");
  const parsed = parsePolicyFile(parse(text));
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return parsed.value;
}

const NOW = Date.parse("2026-12-02T12:00:00Z");

describe("compilePolicy", () => {
  it("compiles the demo policy into a document that validates and resolves routes", () => {
    const doc = finalizePolicy(compilePolicy(demo()), 1, "2026-12-02T12:00:00.000Z");
    const parsed = parseCompiledPolicy(JSON.stringify(doc));
    expect(parsed.ok).toBe(true);
    expect(resolveOperation(doc, "GET /v1/orders/42")?.name).toBe("orders-read");
    expect(doc.operations.export.failureMode).toBe("closed");
    expect(doc.operations["orders-read"].failureMode).toBe("open");
    expect(JSON.stringify(doc)).not.toContain("sk_test_");
  });

  it("keeps limit ids stable when numbers change, and changes them when what is counted changes", () => {
    const a = compilePolicy(demo());
    const edited = demo();
    edited.tiers[0].limits[0].limit = 999;
    edited.tiers[0].limits[0].window = "1h";
    const b = compilePolicy(edited);
    expect(b.tiers.free.limits[0].id).toBe(a.tiers.free.limits[0].id);
    expect(b.tiers.free.limits[0].limit).toBe(999);
    edited.tiers[0].limits[0].scope = "tenant";
    const c = compilePolicy(edited);
    expect(c.tiers.free.limits[0].id).not.toBe(a.tiers.free.limits[0].id);
  });

  it("gives equal checksums to equal policies and different ones to different policies", () => {
    const a = compilePolicy(demo());
    const b = compilePolicy(demo());
    expect(policyChecksum(a)).toBe(policyChecksum(b));
    const edited = demo();
    edited.tiers[1].weight = 5;
    expect(policyChecksum(compilePolicy(edited))).not.toBe(policyChecksum(a));
  });

  it("refuses an invalid policy with the failing path", () => {
    const spec = demo() as PolicySpec;
    (spec.tiers[0].limits[2] as { window?: string }).window = "soon";
    try {
      compilePolicy(spec);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(PolicyCompileError);
      expect((error as PolicyCompileError).issues[0]).toEqual({
        path: "tiers[0].limits[2].window",
        message: 'expected a duration like 30s, got "soon"',
      });
    }
  });

  it("refuses a limit override with nothing to inherit a window from", () => {
    const spec = demo();
    spec.tenants[0].overrides.push({ operation: "catalog", scope: "api_key", limit: 5 });
    expect(() => compilePolicy(spec)).toThrow(/tenants\[0\]\.overrides\[1\]\.window: required/);
  });

  it("a document with a tampered body fails its checksum", () => {
    const doc = finalizePolicy(compilePolicy(demo()), 3, new Date(NOW));
    doc.tiers.free.limits[0].limit = 1_000_000;
    const parsed = parseCompiledPolicy(doc);
    expect(parsed.ok).toBe(false);
  });
});

describe("limitsFor", () => {
  const doc = compilePolicy(demo());

  it("returns the tier's rows for the operation and for *, the quotas and the global caps", () => {
    const r = limitsFor(doc, "wonka", "export", NOW)!;
    expect(r.tier.name).toBe("free");
    expect(r.limits.map((l) => `${l.operation}/${l.scope}/${l.algorithm}`).sort()).toEqual([
      "*/api_key/sliding_window_counter",
      "*/ip/fixed_window",
      "*/tenant/concurrency",
      "export/tenant/token_bucket",
    ]);
    expect(r.quotas.map((q) => `${q.operation}/${q.period}`).sort()).toEqual(["*/month", "export/day"]);
    expect(r.globalCaps).toHaveLength(1);
    expect(limitsFor(doc, "wonka", "orders-read", NOW)!.globalCaps).toHaveLength(0);
  });

  it("replaces the tier's limit with a live override, keeping the limit id", () => {
    const base = limitsFor(doc, "wonka", "export", NOW)!.limits.find((l) => l.operation === "export")!;
    const live = limitsFor(doc, "acme", "export", NOW)!.limits.filter((l) => l.operation === "export");
    expect(live).toHaveLength(1);
    expect(live[0].limit).toBe(100);
    expect(live[0].id).toBe(base.id);
    expect(live[0].windowMs).toBe(base.windowMs);
  });

  it("ignores an expired override", () => {
    const after = Date.parse("2027-01-01T00:00:00Z");
    const r = limitsFor(doc, "acme", "export", after)!.limits.filter((l) => l.operation === "export");
    expect(r[0].limit).toBe(10);
  });

  it("replaces a quota with a quota override", () => {
    const q = limitsFor(doc, "globex", "search", NOW)!.quotas;
    expect(q).toHaveLength(1);
    expect(q[0].limit).toBe(2_000_000);
  });

  it("answers null for an unknown tenant", () => {
    expect(limitsFor(doc, "nobody", "export", NOW)).toBeNull();
    expect(limitsFor(doc, "__proto__", "export", NOW)).toBeNull();
  });
});
