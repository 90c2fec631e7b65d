import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { compilePolicy, policyChecksum, validatePolicySpec, type PolicySpec } from "./compile";
import { specFromDocument } from "./decompile";
import { planPolicy } from "./plan";
import type { PolicyFileInput } from "./policy-file";

const DEMO = parse(readFileSync(path.resolve(import.meta.dirname, "../../examples/demo-policy.yaml"), "utf8")) as PolicyFileInput;

function demoSpec(extra: Partial<PolicyFileInput> = {}): PolicySpec {
  const checked = validatePolicySpec({ ...DEMO, ...extra } as never);
  if (!checked.ok) throw new Error(JSON.stringify(checked.issues));
  return checked.value;
}

const REQUIREMENTS = {
  accuracy: "2.5%",
  rejectP95: "40ms",
  operations: [{ operation: "export", failureMode: "closed" as const, boundaryBurst: "forbidden" as const }],
  limits: [{ tier: "free", operation: "*", scope: "api_key" as const, accuracy: "1%" }],
};

describe("specFromDocument", () => {
  it("gives a spec that compiles to the same document, with or without the draft as a hint", () => {
    for (const spec of [demoSpec(), demoSpec({ requirements: REQUIREMENTS, defaults: { failureMode: "closed" } })]) {
      const doc = compilePolicy(spec);
      const bare = specFromDocument(doc);
      expect(validatePolicySpec(bare).ok).toBe(true);
      expect(policyChecksum(compilePolicy(bare))).toBe(policyChecksum(doc));
      expect(policyChecksum(compilePolicy(specFromDocument(doc, spec)))).toBe(policyChecksum(doc));
    }
  });

  it("keeps the draft's own spelling, so resetting a draft equal to live changes nothing", () => {
    const spec = demoSpec({ requirements: REQUIREMENTS });
    const doc = compilePolicy(spec);
    const again = specFromDocument(doc, spec);
    const keys = { keys: [] };
    expect(planPolicy({ spec, ...keys }, { spec: again, ...keys })).toMatchObject({ created: [], changed: [], deleted: [] });
  });

  it("changes exactly what the draft changed against live, with the live values", () => {
    const live = demoSpec();
    const doc = compilePolicy(live);
    const draft = structuredClone(live);
    draft.tenants.find((t) => t.slug === "wonka")!.tier = "pro";
    draft.tiers.find((t) => t.name === "free")!.limits[0].limit = 150;
    draft.tenants.find((t) => t.slug === "stark")!.overrides.push({ operation: "*", scope: "api_key", limit: 5000 });
    draft.tiers.push({ name: "startup", weight: 2, limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 50, window: "1m", mode: "reject" }], quotas: [] });
    draft.operations.find((o) => o.name === "search")!.failureMode = "closed";

    const reset = specFromDocument(doc, draft);
    expect(policyChecksum(compilePolicy(reset))).toBe(policyChecksum(doc));
    const plan = planPolicy({ spec: draft, keys: [] }, { spec: reset, keys: [] });
    const touched = [...plan.created, ...plan.changed, ...plan.deleted].map((c) => `${c.entity}:${c.key}`).sort();
    expect(touched).toEqual(
      ["limit:free/*/api_key/sliding_window_counter", "limit:startup/*/api_key/fixed_window", "operation:search", "override:stark/*/scope:api_key", "tenant:wonka", "tier:startup"].sort(),
    );
    const limit = plan.changed.find((c) => c.entity === "limit");
    expect(limit?.after).toMatchObject({ limit: 100 });
    expect(plan.changed.find((c) => c.entity === "operation")?.after).toMatchObject({ failureMode: "local" });
  });

  it("keeps the draft's order of tiers, whatever the order of the document's keys (jsonb sorts them)", () => {
    const spec = demoSpec();
    const doc = compilePolicy(spec);
    const reordered = { ...doc, tiers: Object.fromEntries(Object.entries(doc.tiers).reverse()) };
    expect(planPolicy({ spec, keys: [] }, { spec: specFromDocument(reordered, spec), keys: [] })).toMatchObject({ created: [], changed: [], deleted: [] });
  });

  it("spells an override out in full when the draft has none like it (window, algorithm, burst, expiry)", () => {
    const live = demoSpec();
    const doc = compilePolicy(live);
    const acme = specFromDocument(doc).tenants.find((t) => t.slug === "acme")!;
    // acme's override inherits the free tier's export token bucket (1h, burst 1): the document has it resolved.
    expect(acme.overrides).toEqual([
      { operation: "export", scope: "tenant", limit: 100, algorithm: "token_bucket", window: "1h", burst: 1, expiresAt: "2027-01-01T00:00:00.000Z" },
    ]);
  });
});

const ENVOY = {
  unknownDomain: "error" as const,
  domains: [
    {
      domain: "messaging",
      descriptors: [
        { key: "message_type", value: "marketing", descriptors: [{ key: "to_number", rate_limit: { unit: "Day", requests_per_unit: 5, name: "marketing" } }] },
        { key: "to_number", shadow_mode: false, rate_limit: { unit: "day", requests_per_unit: 100, replaces: [{ name: "marketing" }] } },
        { key: "files", value: "files/*", share_threshold: true, metadata: { team: "storage" }, rate_limit: { window: "60s", requests_per_unit: 10, algorithm: "sliding_window_counter" as const, failureMode: "closed" as const } },
        { key: "ldap", rate_limit: { unlimited: true, unit: "bogus", requests_per_unit: 9 } },
        { key: "billing", rate_limit: { period: "month" as const, requests_per_unit: 10_000 } },
        { key: "whitelisted", value: "yes" },
      ],
    },
    { domain: "empty" },
  ],
};

describe("specFromDocument with Envoy domains (rollback and discard reset the draft with it)", () => {
  it("round-trips the section: the canonical spelling compiles to the same document", () => {
    const spec = demoSpec({ rateLimitService: ENVOY });
    const doc = compilePolicy(spec);
    const bare = specFromDocument(doc);
    expect(validatePolicySpec(bare).ok).toBe(true);
    expect(policyChecksum(compilePolicy(bare))).toBe(policyChecksum(doc));
    expect(bare.rateLimitService?.domains[0]?.descriptors?.[2]?.rate_limit).toEqual({ unit: "minute", requests_per_unit: 10, algorithm: "sliding_window_counter", failureMode: "closed" });
  });

  it("keeps the draft's spelling of a domain that compiles the same, and writes a changed one canonically", () => {
    const spec = demoSpec({ rateLimitService: ENVOY });
    const doc = compilePolicy(spec);
    expect(planPolicy({ spec, keys: [] }, { spec: specFromDocument(doc, spec), keys: [] })).toMatchObject({ created: [], changed: [], deleted: [] });
    const draft = structuredClone(spec);
    draft.rateLimitService!.domains[0]!.descriptors![1]!.rate_limit!.requests_per_unit = 200;
    const plan = planPolicy({ spec: draft, keys: [] }, { spec: specFromDocument(doc, draft), keys: [] });
    expect([...plan.created, ...plan.changed, ...plan.deleted].map((c) => `${c.entity}:${c.key}`)).toEqual(["envoyDomain:messaging"]);
  });

  it("leaves a document without the section without one, and its checksum as it was", () => {
    const doc = compilePolicy(demoSpec());
    expect(doc.rateLimitService).toBeUndefined();
    expect(compilePolicy(demoSpec({ rateLimitService: { domains: [] } })).rateLimitService).toBeUndefined();
    expect(policyChecksum(compilePolicy(demoSpec({ rateLimitService: { domains: [] } })))).toBe(policyChecksum(doc));
    expect(specFromDocument(doc).rateLimitService).toBeUndefined();
  });
});
