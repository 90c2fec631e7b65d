/**
 * The conformance suite against a real 3-master Redis Cluster started for this file, plus the
 * cross-slot path: a global cap lives in another slot than the tenant's counters, so a decision
 * with a global cap runs one script per slot (cap reserved first, refunded if the tenant denies).
 */
import { Cluster } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startRedisCluster, type RedisClusterHandle } from "../../test/redis-cluster";
import { createRedisClient } from "../redis/client";
import { conformanceSuite, globalCheck, limitCheck, manualClock } from "./testing/conformance";
import { createRedisStore, hashTag } from "./redis";
import { keysWithoutTtl, snapshot } from "./testing/redis-keys";

let cluster: RedisClusterHandle;
let client: Cluster;
const prefix = "c:";

beforeAll(async () => {
  cluster = await startRedisCluster();
  client = createRedisClient({ clusterNodes: cluster.nodes, commandTimeoutMs: 5_000 }) as Cluster;
  await client.ping();
}, 60_000);
afterEach(async () => {
  expect(await keysWithoutTtl(client, prefix)).toEqual([]);
});
afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

conformanceSuite("redis cluster (3 masters)", () => ({
  makeStore: (clock) => createRedisStore(client, { testClock: clock }),
  prefix,
}));

describe("Redis Cluster: decisions spanning slots", () => {
  it("a tenant's counters and a global cap are in different slots here (the path under test)", async () => {
    const t = limitCheck(prefix, { algorithm: "fixed_window" });
    const g = globalCheck(prefix);
    const slot = async (key: string) => Number(await client.cluster("KEYSLOT", key));
    expect(hashTag(t.key)).not.toBe(hashTag(g.key));
    expect(await slot(t.key)).not.toBe(await slot(g.key));
  });

  it("when the tenant denies, the reserved global cap is refunded: its counters read as before", async () => {
    const clock = manualClock();
    const store = createRedisStore(client, { testClock: clock });
    const p = `${prefix}refund:`;
    const tenant = limitCheck(p, { algorithm: "sliding_window_counter", limit: 2 });
    const caps = [
      globalCheck(p, { limit: 50 }),
      { ...globalCheck(p, { limit: 50 }), fairShare: { member: "acme", weight: 3 } },
      globalCheck(p, { limit: 50, algorithm: "token_bucket", burst: 50 }),
      globalCheck(p, { limit: 50, algorithm: "sliding_window_log" }),
    ];
    for (let i = 0; i < 2; i++) expect((await store.check([tenant, ...caps], { cost: 1, dryRun: false })).allowed).toBe(true);
    const before = await snapshot(client, p);
    for (let i = 0; i < 5; i++) {
      const d = await store.check([tenant, ...caps], { cost: 1, dryRun: false });
      expect(d.allowed).toBe(false);
      expect(d.outcomes[0].allowed).toBe(false);
      // The caps themselves allowed; they report what is left without this request.
      expect(d.outcomes.slice(1).map((o) => o.remaining)).toEqual([48, 48, 48, 48]);
    }
    const after = await snapshot(client, p);
    // Refunded counters hold the same values (a refunded token bucket keeps level, with a later timestamp).
    for (const [key, value] of Object.entries(before)) {
      if (key.includes("token_bucket") || (typeof value === "object" && value !== null && "l" in value)) continue;
      expect(after[key], key).toEqual(value);
    }
    expect((await store.check(caps, { cost: 1, dryRun: true })).outcomes.map((o) => o.remaining)).toEqual([48, 48, 48, 48]);
  });

  it("the exception's bound: concurrent decisions on a cap never exceed it, and refunds restore it", async () => {
    const store = createRedisStore(client);
    const p = `${prefix}bound:`;
    const cap = globalCheck(p, { limit: 100, windowMs: 3_600_000 });
    // Half the tenants are already at their own limit: their decisions reserve the cap, then refund.
    const blocked = limitCheck(p, { algorithm: "fixed_window", limit: 1, windowMs: 3_600_000 }, "blocked");
    await store.check([blocked], { cost: 1, dryRun: false });
    const open = limitCheck(p, { algorithm: "fixed_window", limit: 10_000, windowMs: 3_600_000 }, "open");
    const decisions = await Promise.all(
      Array.from({ length: 400 }, (_, i) => store.check([i % 2 ? blocked : open, cap], { cost: 1, dryRun: false })),
    );
    const admitted = decisions.filter((d) => d.allowed).length;
    expect(decisions.filter((d, i) => i % 2 === 1 && d.allowed)).toEqual([]);
    // Never above the cap; below it only by reservations that were refunded meanwhile.
    expect(admitted).toBeLessThanOrEqual(100);
    expect(admitted).toBeGreaterThan(0);
    const left = (await store.check([cap], { cost: 1, dryRun: true })).outcomes[0].remaining;
    expect(left).toBe(100 - admitted); // every refund landed: the counter equals what was admitted
  });
});
