import { describe, expect, it } from "vitest";
import { compileFixture } from "./testing/fixture";
import { limitsFor } from "../policy/effective-limits";
import { planChecks, localShare } from "./checks";
import { isSampled } from "./accuracy";
import { rollupRows } from "../jobs/rollup";
import { UsageRecorder } from "../redis/usage";
import { parseUsageHash } from "../redis/usage-format";

const { doc } = compileFixture({
  version: 1,
  operations: [],
  tiers: [
    {
      name: "t",
      limits: [
        { operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 10, window: "1m" },
        { operation: "*", scope: "tenant", algorithm: "fixed_window", limit: 100, window: "1m" },
        { operation: "*", scope: "ip", algorithm: "token_bucket", limit: 10, window: "1s" },
        { operation: "*", scope: "api_key", algorithm: "sliding_window_log", limit: 10, window: "1m" },
      ],
    },
  ],
  tenants: [{ slug: "a", name: "A", tier: "t" }],
});
const effective = limitsFor(doc, "a", "*", 0)!;
const hashOf = (i: number) => i.toString(16).padStart(64, "0");

describe("which subjects the accuracy meter samples", () => {
  it("takes about the stated fraction of subjects, by a stable hash of the counter key", () => {
    let sampled = 0;
    for (let i = 0; i < 20_000; i++) if (isSampled(`sl:{t:a}:c:lim:${hashOf(i * 7919).slice(-16)}`, 0.01)) sampled++;
    expect(sampled).toBeGreaterThan(150);
    expect(sampled).toBeLessThan(250);
    const key = "sl:{t:a}:c:lim:0123456789abcdef";
    expect(new Set(Array.from({ length: 5 }, () => isSampled(key, 0.5))).size).toBe(1);
  });

  it("samples only approximate limits (sliding window counter, fixed window), every one at 1, none at 0", () => {
    const all = planChecks({ effective, keyHash: hashOf(7), ip: "198.51.100.1", prefix: "sl:", accuracySample: 1 });
    expect(all.filter((p) => p.check.exactLog).map((p) => p.check.algorithm)).toEqual(["sliding_window_counter", "fixed_window"]);
    const none = planChecks({ effective, keyHash: hashOf(7), ip: "198.51.100.1", prefix: "sl:", accuracySample: 0 });
    // Every check has the field (one hidden class for all checks, lib/decision/checks.ts limitCheck): none is set.
    expect(none.some((p) => p.check.exactLog !== undefined)).toBe(false);
    expect(planChecks({ effective, keyHash: hashOf(7), ip: null, prefix: "sl:" }).some((p) => p.check.exactLog !== undefined)).toBe(false);
  });

  it("never asks the local failure-mode store for an exact log", () => {
    const sampled = planChecks({ effective, keyHash: hashOf(7), ip: null, prefix: "sl:", accuracySample: 1 }).map((p) => p.check);
    for (const n of [1, 3]) expect(localShare(sampled, n).some((c) => "exactLog" in c)).toBe(false);
  });
});

describe("the accuracy meter in the usage aggregates", () => {
  it("counts sampled decisions and each side's admissions per tier and limit, and rolls them up as system rows", () => {
    const recorder = new UsageRecorder(null);
    const base = { atMs: 120_000, tenant: "a", tier: "t", operation: "*", keyPrefix: "abc", latencyMs: 1 } as const;
    recorder.record({ ...base, outcome: "allowed", accuracy: [{ limit: "t-api_key", limitAdmitted: true, exactAdmitted: true }] });
    recorder.record({ ...base, outcome: "allowed", accuracy: [{ limit: "t-api_key", limitAdmitted: true, exactAdmitted: false }] });
    recorder.record({ ...base, outcome: "denied", accuracy: [{ limit: "t-api_key", limitAdmitted: false, exactAdmitted: true }] });
    recorder.record({ ...base, outcome: "allowed" });
    const hash = Object.fromEntries([...recorder.snapshot().get(120_000)!].map(([f, n]) => [f, String(n)]));
    expect(hash).toMatchObject({ "a|t|t-api_key|sampled": "3", "a|t|t-api_key|limit": "2", "a|t|t-api_key|exact": "2" });
    const usage = parseUsageHash(120_000, { ...hash, "a|t||limit": "5", "a|t|x|bogus": "1" });
    expect(usage.accuracy.sort((x, y) => x.what.localeCompare(y.what))).toEqual([
      { tier: "t", limit: "t-api_key", what: "exact", count: 2 },
      { tier: "t", limit: "t-api_key", what: "limit", count: 2 },
      { tier: "t", limit: "t-api_key", what: "sampled", count: 3 },
    ]);
    const rows = rollupRows(usage).filter((r) => r.operation.startsWith("accuracy:") && r.granularity === "minute");
    expect(rows.map((r) => [r.tenant, r.tier, r.operation, r.outcome, Number(r.count)]).sort()).toEqual([
      ["", "t", "accuracy:t-api_key", "exact", 2],
      ["", "t", "accuracy:t-api_key", "limit", 2],
      ["", "t", "accuracy:t-api_key", "sampled", 3],
    ]);
  });
});
