// The cost of serving two policy versions at once (a guarded rollout, docs/control-plane.md):
// in-process decisions over the memory store for 1,000 tenants, with one version, and with a
// rollout whose cohort is half the tenants (the engine asks the policy source for each tenant's
// document: one Set lookup, the cohort computed once at load). Rounds interleave the two setups,
// so machine noise hits both alike; the figure is the median round's µs per decision.
import { CircuitBreaker } from "../lib/decision/breaker";
import { DecisionEngine } from "../lib/decision/engine";
import { DecisionMetrics } from "../lib/decision/metrics";
import { compileFixture } from "../lib/decision/testing/fixture";
import { cohortMembers } from "../lib/policy/rollout";
import { UsageRecorder } from "../lib/redis/usage";
import { createMemoryStore } from "../lib/store/memory";

const TENANTS = Array.from({ length: 1_000 }, (_, i) => `t${i}`);
const policy = (limit: number, version: number) =>
  compileFixture(
    {
      version: 1,
      defaults: { failureMode: "open" },
      operations: [{ name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] }],
      tiers: [{ name: "free", limits: [{ operation: "*", scope: "tenant", algorithm: "sliding_window_counter", limit, window: "1m" }] }],
      tenants: TENANTS.map((slug) => ({ slug, name: slug, tier: "free" })),
    } as never,
    version,
  ).doc;
const live = policy(999_999_999, 1);
const candidate = policy(1_000_000_000, 2);
const cohort = cohortMembers({ salt: "ro_bench", canaries: [], percent: 50 }, TENANTS);

function engine(policyFor?: (tenant: string) => typeof live) {
  return new DecisionEngine({
    policy: () => live,
    ...(policyFor ? { policyFor } : {}),
    keyIndex: { peek: () => null, fetch: async () => null },
    store: createMemoryStore(),
    localStore: createMemoryStore(),
    instances: 1,
    storeTimeoutMs: 25,
    breaker: new CircuitBreaker(),
    denyCache: null,
    usage: new UsageRecorder(null),
    metrics: new DecisionMetrics({ defaultMetrics: false }),
  });
}
const setups = {
  "one version": engine(),
  "rollout, half the tenants on v2": engine((tenant) => (cohort.has(tenant) ? candidate : live)),
};
const N = 100_000;
const results: Record<string, number[]> = {};
for (let round = 0; round < 7; round++) {
  for (const [name, e] of Object.entries(setups)) {
    const t = performance.now();
    let v2 = 0;
    for (let i = 0; i < N; i++) {
      const a = await e.decide({ tenant: TENANTS[i % TENANTS.length]!, operation: "GET /v1/orders/42" });
      if (a.policyVersion === 2) v2++;
    }
    if (round > 0) (results[name] ??= []).push(((performance.now() - t) * 1000) / N);
    if (name !== "one version" && (v2 < N * 0.45 || v2 > N * 0.55)) throw new Error(`cohort share ${v2 / N}`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const one = median(results["one version"]!);
for (const [name, xs] of Object.entries(results)) console.log(`${name}: ${median(xs).toFixed(2)} µs/decision (${((median(xs) / one - 1) * 100).toFixed(1)}% vs one version)`);
process.exit(0);
