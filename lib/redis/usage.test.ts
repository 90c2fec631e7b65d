import { describe, expect, it } from "vitest";
import { UsageRecorder } from "./usage";
import { parseUsageHash, usageFields } from "./usage-format";

function hashOf(r: UsageRecorder, minute: number): Record<string, string> {
  return Object.fromEntries([...(r.snapshot().get(minute) ?? new Map<string, number>())].map(([k, v]) => [k, String(v)]));
}

describe("usage aggregates: quota denials (q| fields)", () => {
  it("counts a denial by a quota in q|<tenant>|<quotaId>, besides its d| and k| fields", () => {
    const r = new UsageRecorder(null);
    const base = { tenant: "acme", tier: "free", operation: "orders-read", keyPrefix: "abcdef012345", latencyMs: 1 } as const;
    r.record({ ...base, atMs: 120_100, outcome: "denied", deniedQuota: "0123456789abcdef" });
    r.record({ ...base, atMs: 120_200, outcome: "denied", deniedQuota: "0123456789abcdef" });
    r.record({ ...base, atMs: 120_300, outcome: "denied", deniedQuota: null }); // a rate limit
    r.record({ ...base, atMs: 120_400, outcome: "denied" }); // an older caller: no field at all
    r.record({ ...base, atMs: 120_500, outcome: "allowed", deniedQuota: "0123456789abcdef" }); // ignored: not a denial
    r.record({ atMs: 120_600, tenant: null, tier: null, operation: null, outcome: "denied", keyPrefix: null, latencyMs: 1, deniedQuota: "x" });
    const hash = hashOf(r, 120_000);
    expect(hash[usageFields.quotaDenied("acme", "0123456789abcdef")]).toBe("2");
    expect(hash["d|acme|free|orders-read|denied"]).toBe("4");
    expect(Object.keys(hash).filter((k) => k.startsWith("q|"))).toEqual(["q|acme|0123456789abcdef"]);

    const parsed = parseUsageHash(120_000, hash);
    expect(parsed.quotaDenials).toEqual([{ tenant: "acme", quotaId: "0123456789abcdef", count: 2 }]);
    expect(parsed.decisions.find((d) => d.outcome === "denied" && d.tenant === "acme")?.count).toBe(4);
  });

  it("parses hashes written before q| fields existed, and skips malformed q| fields", () => {
    const old = { "d|acme|free|*|denied": "3", "k|acme|_|denied": "3", "e|redis_error": "1" };
    const parsed = parseUsageHash(0, { ...old, "q|acme": "1", "q|acme|a|b": "1", "q||q1": "2", "q|acme|q1": "x", "z|new|kind": "9" });
    expect(parsed.quotaDenials).toEqual([]);
    expect(parsed.decisions).toEqual([{ tenant: "acme", tier: "free", operation: "*", outcome: "denied", count: 3 }]);
    expect(parsed.errors.redis_error).toBe(1);
  });

  it("keeps `|` out of the field's parts", () => {
    expect(usageFields.quotaDenied("a|b", "q|1")).toBe("q|a_b|q_1");
  });
});
