/**
 * The accuracy meter's exact log (lib/store/lua/exact-log.ts) against its pure twin (the memory
 * store running sliding_window_log at `<key>:x`): the same scenarios through both stores must report
 * the same `accuracy` on every check, besides the same answers; and on a hand-made scenario the
 * numbers are the ones worked out by hand.
 */
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "@/test/helpers";
import { createMemoryStore } from "./memory";
import { expectParity, realTimeScenarioArbitrary, scenarioArbitrary, type Scenario } from "./testing/parity";
import { createRedisStore } from "./redis";
import type { LimitCheck } from "./types";

const sampled = (s: Scenario): Scenario => ({ ...s, check: { ...s.check, exactLog: true } });

describe("the accuracy meter's exact log answers in Lua exactly as its pure twin", () => {
  let redis: Redis;
  const prefix = `${testRedisPrefix()}acc:`;
  beforeAll(() => {
    redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
  });
  afterAll(() => redis.disconnect());

  for (const algorithm of ["sliding_window_counter", "fixed_window"] as const) {
    it(`${algorithm}: on random sequences (costs, edges, pairs that another check denies, dry runs)`, async () => {
      await fc.assert(fc.asyncProperty(scenarioArbitrary(algorithm).map(sampled), (s) => expectParity(redis, prefix, s)), { numRuns: 60 });
    });
    it(`${algorithm}: on Redis server time, as in production`, async () => {
      await fc.assert(
        fc.asyncProperty(realTimeScenarioArbitrary(algorithm).map(sampled), (s) => expectParity(redis, prefix, s, { clock: "redis" })),
        { numRuns: 10 },
      );
    });
  }

  it("counts what the limit and an exact log admit, a request another check denies for neither, and nothing on a dry run", async () => {
    // fixed window of 4 per second: 4 at 900 ms, then 4 at 1,100 ms. The window admits all 8 (a new
    // window at 1,000 ms); an exact log of 4 per second admits the first 4 and none of the next 4.
    let nowMs = Date.UTC(2026, 11, 3, 12, 0, 0, 900);
    const clock = () => nowMs;
    const tag = `{t:h${Date.now()}}`;
    const counter: LimitCheck = {
      key: `${prefix}${tag}:c:fw:a`, kind: "limit", algorithm: "fixed_window", limit: 4, windowMs: 1_000, burst: 4,
      precision: 1, mode: "reject", maxDelayMs: 0, leaseTtlMs: 0, exactLog: true,
    };
    const quota: LimitCheck = { ...counter, key: `${prefix}${tag}:q`, algorithm: "quota", kind: "quota", limit: 7, period: "day", exactLog: undefined };
    for (const [name, store] of [["redis", createRedisStore(redis, { testClock: clock })], ["memory", createMemoryStore({ clock })]] as const) {
      const checks = [counter, quota].map((c) => ({ ...c, key: `${c.key}:${name}` }));
      nowMs = Date.UTC(2026, 11, 3, 12, 0, 0, 900);
      const seen: { limit: number; exact: number } = { limit: 0, exact: 0 };
      const dry = await store.check(checks, { cost: 1, dryRun: true });
      expect(dry.outcomes[0].accuracy).toBeUndefined();
      for (const at of [900, 900, 900, 900, 1_100, 1_100, 1_100, 1_100]) {
        nowMs = Date.UTC(2026, 11, 3, 12, 0, 0, at);
        const d = await store.check(checks, { cost: 1, dryRun: false });
        const a = d.outcomes[0].accuracy!;
        seen.limit += a.limitAdmitted ? 1 : 0;
        seen.exact += a.exactAdmitted ? 1 : 0;
      }
      // the quota of 7 denies the 8th request: admitted by neither
      expect(seen, name).toEqual({ limit: 7, exact: 4 });
      await store.close();
    }
  });
});
