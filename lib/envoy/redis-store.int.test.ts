/**
 * The ENVOY_COUNT script (lib/envoy/fixed-window-lua.ts) and its TypeScript twin
 * (lib/envoy/memory-store.ts over lib/policy/envoy/memory.ts) give the same counts on the same
 * clock, for fast-check's random sequences; the Redis store survives SCRIPT FLUSH without
 * counting twice, sends the calls of one event-loop turn as one script call, and works on a
 * Redis Cluster, where a call's counters live in different slots.
 */
import fc from "fast-check";
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRedisCluster, type RedisClusterHandle } from "../../test/redis-cluster";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { type OwnRedis, startOwnRedis } from "../processes/redis-server";
import { counterKeys } from "../policy/counter-keys";
import { createRedisClient } from "../redis/client";
import type { EnvoyCounterInput } from "./counter-store";
import { createMemoryEnvoyCounters } from "./memory-store";
import { createRedisEnvoyCounters } from "./redis-store";

const START_MS = Date.UTC(2026, 11, 7);
const WINDOWS = [1, 60, 3_600, 86_400, 604_800, 2_592_000, 31_536_000];

let redis: Redis;
beforeAll(() => {
  redis = new Redis(testRedisUrl());
});
afterAll(() => redis?.disconnect());

describe("ENVOY_COUNT and its twin", () => {
  it("count the same on the same clock: every hit added, 0 reads, a new window starts at zero", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            advanceMs: fc.integer({ min: 0, max: 90_000 }),
            inputs: fc.array(fc.record({ subject: fc.constantFrom("a", "b", "c|d", "{x}"), window: fc.constantFrom(...WINDOWS), hits: fc.integer({ min: 0, max: 5 }) }), { minLength: 1, maxLength: 4 }),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        async (steps) => {
          run++;
          let nowMs = START_MS + 123;
          const clock = () => nowMs;
          const lua = createRedisEnvoyCounters(redis, { testClock: clock });
          const twin = createMemoryEnvoyCounters(clock);
          for (const step of steps) {
            nowMs += step.advanceMs;
            // A rule per window (its id), the subject as the entries' values: what the decision path sends.
            const inputs: EnvoyCounterInput[] = step.inputs.map((c) => ({ key: counterKeys.envoy(`parity${run}w${c.window}`, [c.subject], testRedisPrefix()), windowSeconds: c.window, hits: c.hits }));
            const [fromLua, fromTwin] = await Promise.all([lua.count(inputs, {}), twin.count(inputs, {})]);
            expect(fromLua).toEqual(fromTwin);
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe("the Redis Envoy counters", () => {
  let own: OwnRedis;
  let ownClient: Redis;
  beforeAll(async () => {
    own = await startOwnRedis();
    ownClient = new Redis(own.url);
  });
  afterAll(async () => {
    ownClient?.disconnect();
    await own?.stop();
  });

  // Its own redis-server: a SCRIPT FLUSH on the shared one would reach other runs' scripts.
  it("is loaded again after SCRIPT FLUSH and counts the call once", async () => {
    const counters = createRedisEnvoyCounters(ownClient);
    const input = { key: counterKeys.envoy("flushed", ["v"], "sl:"), windowSeconds: 3_600, hits: 2 };
    const first = await counters.count([input], {});
    await ownClient.script("FLUSH");
    const second = await counters.count([input], {});
    expect(second.counts[0]).toBe(first.counts[0]! + 2);
  });

  it("send the calls of one event-loop turn as one script call, each answered with its own counts", async () => {
    const counters = createRedisEnvoyCounters(ownClient);
    await counters.count([{ key: "w{e:warm:x}", windowSeconds: 60, hits: 1 }], {});
    await ownClient.config("RESETSTAT");
    const calls = Array.from({ length: 20 }, (_, i) => counters.count([{ key: `{e:r:${i % 2}}`, windowSeconds: 3_600, hits: 1 }, { key: `{e:s:${i}}`, windowSeconds: 60, hits: 3 }], {}));
    const answers = await Promise.all(calls);
    const stats = await ownClient.info("commandstats");
    expect(Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0)).toBe(1);
    // Counted one after the other, as if each came alone.
    expect(answers.map((a) => a.counts)).toEqual(Array.from({ length: 20 }, (_, i) => [Math.floor(i / 2) + 1, 3]));
  });

  it("on a Redis Cluster, counts a call whose counters live in different slots", async () => {
    let cluster: RedisClusterHandle | undefined;
    let client: Cluster | undefined;
    try {
      cluster = await startRedisCluster();
      client = createRedisClient({ clusterNodes: cluster.nodes, commandTimeoutMs: 5_000 }) as Cluster;
      const counters = createRedisEnvoyCounters(client);
      const inputs = ["a", "b", "c", "d"].map((v) => ({ key: counterKeys.envoy("cluster", [v], "sl:"), windowSeconds: 60, hits: 2 }));
      const slots = new Set(await Promise.all(inputs.map(async (c) => Number(await client!.cluster("KEYSLOT", c.key)))));
      expect(slots.size).toBeGreaterThan(1);
      expect((await counters.count(inputs, {})).counts).toEqual([2, 2, 2, 2]);
      expect((await counters.count(inputs, {})).counts).toEqual([4, 4, 4, 4]);
    } finally {
      client?.disconnect();
      await cluster?.stop();
    }
  }, 60_000);
});
