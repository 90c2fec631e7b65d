// What mixed traffic costs one kind of decision in process (docs/benchmarks.md "The latest runs"):
// the CPU per single check (the bench policy's one sliding-window counter per address; body parsed,
// decided on the real Redis store and codec, answer serialized, 50 at a time) on an engine that has
// answered only single checks, then again after it answered MIXED_WITH (demo: four counters with a
// quota; deny: from the deny cache). `npx tsx bench/micro-mixed.mts`; REDIS_URL (default the local
// one), MIXED_N decisions per phase (default 60000).
import { Redis } from "ioredis";
import { CircuitBreaker } from "../lib/decision/breaker";
import { DenyCache } from "../lib/decision/deny-cache";
import { type DecisionRequest, DecisionEngine } from "../lib/decision/engine";
import { DecisionMetrics } from "../lib/decision/metrics";
import { parseCheckBody } from "../lib/decision/request";
import { UsageRecorder } from "../lib/redis/usage";
import { createMemoryStore } from "../lib/store/memory";
import { createRedisStore } from "../lib/store/redis/index";
import { BENCH_DEMO_KEY, BENCH_DENY_KEY, BENCH_KEY, benchPolicy } from "./bench-policy";

const N = Number(process.env.MIXED_N ?? 60_000);
const MIXED = (process.env.MIXED_WITH ?? "demo").split(",");
const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", { maxRetriesPerRequest: 0 });
const fixture = benchPolicy();
const engine = new DecisionEngine({
  policy: () => fixture.doc,
  keyIndex: { peek: (h) => fixture.keyIndex[h] ?? null, fetch: async (h) => fixture.keyIndex[h] ?? null },
  store: createRedisStore(redis),
  localStore: createMemoryStore(),
  instances: 1,
  storeTimeoutMs: 1_000,
  breaker: new CircuitBreaker(),
  denyCache: new DenyCache(),
  usage: new UsageRecorder(null),
  metrics: new DecisionMetrics(),
  keyPrefix: `mm${process.pid}:`,
});

let ip = 0;
/** As the HTTP adapter takes it: a JSON body, parsed and checked (lib/decision/request.ts). */
function request(key: string): DecisionRequest {
  const body = Buffer.from(JSON.stringify({ key, operation: "GET /v1/orders", ip: `10.${(ip >> 16) & 255}.${(ip >> 8) & 255}.${ip++ & 255}` }));
  const parsed = parseCheckBody(JSON.parse(body.toString("utf8")));
  if (!parsed.ok || parsed.batch) throw new Error("bad body");
  return parsed.request;
}
/** CPU µs per decision of `n` decisions of `key`, 50 at a time (a turn's worth, as under load). */
async function phase(key: string, n: number): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < n; i += 50) await Promise.all(Array.from({ length: 50 }, () => engine.decide(request(key)).then((a) => JSON.stringify(a))));
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}
const keyOf: Record<string, string> = { single: BENCH_KEY, demo: BENCH_DEMO_KEY, deny: BENCH_DENY_KEY };
await phase(BENCH_KEY, N); // warm-up
const before = [await phase(BENCH_KEY, N), await phase(BENCH_KEY, N)];
for (const m of MIXED) await phase(keyOf[m]!, N);
const after = [await phase(BENCH_KEY, N), await phase(BENCH_KEY, N)];
console.log(`single check, µs CPU per decision: before ${before.map((x) => x.toFixed(2)).join(" / ")}, after ${MIXED.join("+")} ${after.map((x) => x.toFixed(2)).join(" / ")}`);
redis.disconnect();
process.exit(0);
