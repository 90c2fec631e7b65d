// In-process cost of one decision without HTTP: the deny path (answered from the deny cache) and
// body parsing + JSON answer, to tell the engine's share of the decision server's CPU.
import { CircuitBreaker } from "../lib/decision/breaker";
import { DenyCache } from "../lib/decision/deny-cache";
import { DecisionEngine } from "../lib/decision/engine";
import { compileFixture } from "../lib/decision/testing/fixture";
import { DecisionMetrics } from "../lib/decision/metrics";
import { parseCheckBody } from "../lib/decision/request";
import { sha256Hex } from "../lib/redis/key-index";
import { UsageRecorder } from "../lib/redis/usage";
import { createMemoryStore } from "../lib/store/memory";
const { doc } = compileFixture({
  version: 1, defaults: { failureMode: "open" },
  operations: [{ name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] }],
  tiers: [{ name: "deny", limits: [{ operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 1, window: "1h" }] }],
  tenants: [{ slug: "denier", name: "Denier", tier: "deny" }],
} as never);
const keys = Array.from({ length: 100 }, (_, i) => `dk_${i}_deny`);
const index = new Map(keys.map((k) => [sha256Hex(k), "denier"]));
const engine = new DecisionEngine({
  policy: () => doc, keyIndex: { peek: (h) => index.get(h) ?? null, fetch: async (h) => index.get(h) ?? null },
  store: createMemoryStore(), localStore: createMemoryStore(), instances: 1, storeTimeoutMs: 25,
  breaker: new CircuitBreaker(), denyCache: new DenyCache(), usage: new UsageRecorder(null), metrics: new DecisionMetrics(),
});
for (const key of keys) for (let i = 0; i < 2; i++) await engine.decide({ key, operation: "GET /v1/orders/42" });
const bodies = keys.map((key) => Buffer.from(JSON.stringify({ key, operation: "GET /v1/orders/42" })));
for (let round = 0; round < 3; round++) {
  const N = 100_000;
  const t = performance.now();
  for (let i = 0; i < N; i++) {
    const parsed = parseCheckBody(JSON.parse(bodies[i % 100]!.toString("utf8")));
    if (!parsed.ok || parsed.batch) throw new Error("bad");
    const a = await engine.decide(parsed.request);
    if (a.allowed) throw new Error("not denied");
    JSON.stringify(a);
  }
  console.log(`deny path, parse + decide + stringify: ${(((performance.now() - t) * 1000) / N).toFixed(2)} µs/decision`);
}
process.exit(0);
