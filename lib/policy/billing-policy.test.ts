import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { compilePolicy, policyChecksum, validatePolicySpec, type PolicySpec } from "./compile";
import { parseCompiledPolicy } from "./compiled-schema";
import { finalizePolicy } from "./compile";
import { specFromDocument } from "./decompile";
import type { PolicyFileInput } from "./policy-file";
import { stampChanges } from "./publish-stamps";
import { buildUsageAnswer, usageReadPlan } from "./tenant-usage-answer";

const DEMO = parse(readFileSync(path.resolve(import.meta.dirname, "../../examples/demo-policy.yaml"), "utf8")) as PolicyFileInput;

function spec(edit: (s: PolicyFileInput) => void = () => {}): PolicySpec {
  const input = structuredClone(DEMO);
  edit(input);
  const checked = validatePolicySpec(input as never);
  if (!checked.ok) throw new Error(JSON.stringify(checked.issues));
  return checked.value;
}

const LA = { anchor: "2026-03-15", timeZone: "America/Los_Angeles" };

describe("billing in the policy file", () => {
  it("refuses an unknown time zone or an anchor that is not a date, naming the tenant and the field", () => {
    const input = structuredClone(DEMO);
    input.tenants![0]!.billing = { anchor: "2026-02-30", timeZone: "Mars/Olympus_Mons" };
    const checked = validatePolicySpec(input as never);
    expect(checked.ok).toBe(false);
    const slug = input.tenants![0]!.slug;
    expect(!checked.ok && checked.issues).toEqual(
      expect.arrayContaining([
        { path: "tenants[0].billing.anchor", message: `tenant ${slug}: expected a date YYYY-MM-DD, got "2026-02-30"` },
        { path: "tenants[0].billing.timeZone", message: expect.stringContaining(`tenant ${slug}: unknown time zone "Mars/Olympus_Mons"`) },
      ]),
    );
    for (const timeZone of ["+05:00", "", "../etc"]) {
      input.tenants![0]!.billing = { anchor: "2026-03-15", timeZone };
      expect(validatePolicySpec(input as never).ok).toBe(false);
    }
    input.tenants![0]!.billing = { anchor: "15", timeZone: "UTC" };
    expect(validatePolicySpec(input as never).ok).toBe(false);
  });

  it("takes a YAML 1.1 Date as the date it names; refuses thresholds out of range or repeated", () => {
    const s = spec((f) => (f.tenants![0]!.billing = { anchor: new Date("2026-03-15T00:00:00Z") as never, timeZone: "UTC" }));
    expect(s.tenants[0]!.billing).toEqual({ anchor: "2026-03-15", timeZone: "UTC" });
    for (const thresholds of [[0], [80, 80], [1001]]) {
      const input = structuredClone(DEMO);
      input.tiers![0]!.thresholds = thresholds;
      expect(validatePolicySpec(input as never).ok).toBe(false);
    }
  });

  it("compiles billing, thresholds and the plan-change rule, reads them back, and leaves documents without them as they were", () => {
    const plain = compilePolicy(spec());
    expect(JSON.stringify(plain)).not.toMatch(/billing|thresholds|planChange/);
    const s = spec((f) => {
      f.tenants![0]!.billing = LA;
      f.tenants![0]!.thresholds = [50, 90, 100];
      f.tiers![0]!.thresholds = [75];
      f.defaults = { failureMode: "open", planChange: "prorate" };
    });
    const doc = compilePolicy(s);
    expect(doc.tenants[s.tenants[0]!.slug]).toMatchObject({ billing: LA, thresholds: [50, 90, 100] });
    expect(doc.defaults.planChange).toBe("prorate");
    expect(parseCompiledPolicy(finalizePolicy(doc, 1, "2026-01-01T00:00:00.000Z")).ok).toBe(true);
    const back = specFromDocument(doc);
    expect(policyChecksum(compilePolicy(back))).toBe(policyChecksum(doc));
    expect(back.tenants[0]).toMatchObject({ billing: LA, thresholds: [50, 90, 100] });
    expect(back.tiers[0]!.thresholds).toEqual([75]);
  });
});

describe("publish stamps billing and tier changes", () => {
  const at = Date.UTC(2026, 4, 20, 12);
  it("stamps the tenant that changed, carries the stamps while nothing changes, and equals live when the draft does", () => {
    const live = stampChanges(compilePolicy(spec()), null, at - 1000);
    const slug = Object.keys(live.tenants)[0]!;
    expect(live.tenants[slug]!.billingChange).toBeUndefined();
    const draft = compilePolicy(spec((f) => (f.tenants![0]!.billing = LA)));
    const v2 = stampChanges(draft, live, at);
    expect(v2.tenants[slug]!.billingChange).toEqual({ atMs: at, previous: null });
    // Nothing changed since: the stamp carries on and the checksum is the live one.
    expect(policyChecksum(stampChanges(draft, v2, at + 5000))).toBe(policyChecksum(v2));
  });

  it("a tier change records the old tier's quotas and the policy's rule", () => {
    const base = spec();
    const live = compilePolicy(base);
    const tenant = base.tenants[0]!;
    const other = base.tiers.find((t) => t.name !== tenant.tier && t.quotas.length > 0)!;
    const next = stampChanges(compilePolicy(spec((f) => (f.tenants![0]!.tier = other.name))), live, at);
    const change = next.tenants[tenant.slug]!.planChange!;
    expect(change).toMatchObject({ atMs: at, fromTier: tenant.tier, rule: "full" });
    expect(change.quotas.map((q) => q.quotaId).sort()).toEqual(live.tiers[tenant.tier]!.quotas.map((q) => q.id).sort());
  });
});

describe("the usage answer (GET /v1/usage, the portal)", () => {
  it("reads each quota's counter of the tenant's own period and reports used, remaining, reset and thresholds crossed", () => {
    const s = spec((f) => (f.tenants![0]!.billing = LA));
    const doc = compilePolicy(s);
    const slug = s.tenants[0]!.slug;
    const nowMs = Date.UTC(2026, 2, 20);
    const plan = usageReadPlan(doc, slug, nowMs, "sl:")!;
    expect(plan.quotas.length).toBeGreaterThan(0);
    const q = plan.quotas[0]!;
    expect(q.counterKey).toBe(`sl:{t:${slug}}:q:${q.quota.id}:${q.quota.period === "month" ? "2026-03-15" : "2026-03-19"}@America/Los_Angeles`);
    for (const r of plan.quotas) expect(r.counterKey.startsWith(`sl:{t:${slug}}:`)).toBe(true);
    const used = Math.ceil(q.quota.limit * 0.85);
    const answer = buildUsageAnswer(doc, plan, { counters: new Map([[q.counterKey, used]]) }, nowMs);
    expect(answer.quotas[0]).toMatchObject({ used, limit: q.quota.limit, remaining: q.quota.limit - used, thresholdsCrossed: [80], resetAtMs: q.period.endMs });
    expect(usageReadPlan(doc, "no-such-tenant", nowMs, "sl:")).toBeNull();
  });

  it("after a tier change mid-period, counts the old tier's counter into used (full) or prorates the rest", () => {
    const base = spec();
    const t0 = base.tenants[0]!;
    const to = base.tiers.find((t) => t.name !== t0.tier && t.quotas.some((q) => q.period === "month" && q.operation === "*"))!;
    const changeAt = Date.UTC(2026, 5, 10);
    for (const rule of ["full", "prorate"] as const) {
      const live = compilePolicy(spec((f) => (f.defaults = { failureMode: "open", planChange: rule })));
      expect(live.tiers[t0.tier]!.quotas.some((q) => q.period === "month" && q.operation === "*")).toBe(true);
      const doc = stampChanges(compilePolicy(spec((f) => ((f.tenants![0]!.tier = to.name), (f.defaults = { failureMode: "open", planChange: rule })))), live, changeAt);
      const plan = usageReadPlan(doc, t0.slug, Date.UTC(2026, 5, 20), "")!;
      const r = plan.quotas.find((x) => x.quota.period === "month" && x.quota.operation === "*")!;
      expect(r.carriedKey).toMatch(/:2026-06$/);
      const answer = buildUsageAnswer(doc, plan, { counters: new Map([[r.carriedKey!, 100], [r.counterKey, 10]]) }, Date.UTC(2026, 5, 20));
      const row = answer.quotas.find((x) => x.quotaId === r.quota.id)!;
      expect(row.used).toBe(110);
      const limit = r.quota.limit;
      expect(row.limit).toBe(rule === "full" ? limit : 100 + Math.floor((limit * 21) / 30));
    }
  });
});
