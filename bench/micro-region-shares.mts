// The per-decision cost of following region shares (lib/redis/region-shares.ts RegionSharesFollower.apply,
// called for every decision by the Redis backend's currentPolicy/policyFor), and the per-entry cost of the
// share meter fed from the replication outbox's batches (lib/regions/region-share-meter.ts, off the decision
// path). `npx tsx bench/micro-region-shares.mts`
import { compileFixture } from "../lib/decision/testing/fixture";
import { RegionSharesFollower } from "../lib/redis/region-shares";
import type { RedisClient } from "../lib/redis/client";
import { RegionShareMeter } from "../lib/regions/region-share-meter";

const { doc } = compileFixture({
  version: 1,
  operations: [{ name: "orders", match: ["GET /v1/orders"] }],
  tiers: [{ name: "free", limits: [{ operation: "*", scope: "tenant", algorithm: "fixed_window", limit: 100, window: "4s", regions: "shared" }] }],
  tenants: [{ slug: "acme", name: "Acme", tier: "free" }],
} as never);
const follower = new RegionSharesFollower({ redis: null as unknown as RedisClient, region: "us" });
let sink = 0;
for (let round = 0; round < 3; round++) {
  const N = 5_000_000;
  const t = performance.now();
  for (let i = 0; i < N; i++) sink += follower.apply(doc)!.version;
  console.log(`apply (link ok), per decision: ${(((performance.now() - t) * 1e6) / N).toFixed(1)} ns`);
}
{
  const meter = new RegionShareMeter();
  const key = `sl:{t:acme}:c:${doc.tiers.free!.limits[0]!.id}:_`;
  const entries = Array.from({ length: 500 }, (_, i) => ({ key: `${key.replace("acme", `t${i}`)}:${4000 * (i % 3)}`, field: "", units: 3, expireAtMs: 4000 * (i % 3) + 4000, subWindows: 0 }));
  for (let round = 0; round < 3; round++) {
    const N = 2_000;
    const t = performance.now();
    for (let i = 0; i < N; i++) meter.record(entries, null);
    console.log(`share meter, per outbox entry (off the decision path): ${(((performance.now() - t) * 1e6) / (N * entries.length)).toFixed(1)} ns`);
  }
}
if (sink === 42) console.log("");
process.exit(0);
