import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { type OwnRedis, startOwnRedis } from "../processes/redis-server";
import { createRedisClient } from "../redis/client";
import { conformanceSuite, globalCheck, limitCheck, manualClock } from "./testing/conformance";
import { createRedisStore } from "./redis";
import { keysUnder, keysWithoutTtl, snapshot } from "./testing/redis-keys";
import type { LimitCheck } from "./types";

// Our own namespace inside this run's prefix: other suites' keys (policy documents) have no TTL.
const prefix = `${testRedisPrefix()}st${randomBytes(3).toString("hex")}:`;
let redis: Redis;

beforeAll(() => {
  redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
});
afterEach(async () => {
  expect(await keysWithoutTtl(redis, prefix)).toEqual([]);
});
afterAll(async () => {
  const left = await keysUnder(redis, prefix);
  if (left.length > 0) await redis.unlink(...left);
  redis.disconnect();
});

conformanceSuite("redis", () => ({ makeStore: (clock) => createRedisStore(redis, { testClock: clock }), prefix }));

const ALGORITHMS = ["fixed_window", "sliding_window_counter", "sliding_window_log", "token_bucket", "leaky_bucket", "concurrency"] as const;

describe("Redis store", () => {
  it("a denied request changes no counter (every key read before and after)", async () => {
    const clock = manualClock();
    const store = createRedisStore(redis, { testClock: clock });
    for (const algorithm of ALGORITHMS) {
      const p = `${prefix}deny${randomBytes(3).toString("hex")}:`;
      const checks: LimitCheck[] = [
        limitCheck(p, { algorithm, limit: 3, windowMs: 1_000, burst: 3 }),
        limitCheck(p, { algorithm: "quota", kind: "quota", limit: 100, period: "month", overage: "block" }),
        { ...globalCheck(p, { limit: 100 }), fairShare: { member: "acme", weight: 2 } },
      ];
      for (let i = 0; i < 3; i++) {
        expect((await store.check(checks, { cost: 1, dryRun: false })).allowed).toBe(true);
        clock.advance(10);
      }
      const before = await snapshot(redis, p);
      expect(Object.keys(before).length).toBeGreaterThanOrEqual(3);
      for (const cost of [1, 2, 50]) {
        expect((await store.check(checks, { cost, dryRun: false })).allowed, algorithm).toBe(false);
      }
      expect((await store.check(checks, { cost: 1, dryRun: true })).allowed).toBe(false);
      expect(await snapshot(redis, p), algorithm).toEqual(before);
    }
  });

  it("uses Redis server time when no test clock is given", async () => {
    const store = createRedisStore(redis);
    const [s, us] = await redis.time();
    const d = await store.check([limitCheck(prefix, { algorithm: "fixed_window" })], { cost: 1, dryRun: false });
    const redisNowMs = Number(s) * 1000 + Math.floor(Number(us) / 1000);
    expect(Math.abs(d.nowMs - redisNowMs)).toBeLessThan(1_000);
  });

  it("no key is left once its windows have passed", async () => {
    const store = createRedisStore(redis); // real Redis time, real expiry
    const p = `${prefix}ttl${randomBytes(3).toString("hex")}:`;
    for (const algorithm of ALGORITHMS) {
      const c = limitCheck(p, { algorithm, limit: 3, windowMs: 200, burst: 3, leaseTtlMs: 200, precision: 2 });
      for (let i = 0; i < 4; i++) await store.check([c], { cost: 1, dryRun: false });
    }
    await store.check([{ ...globalCheck(p, { windowMs: 200 }), fairShare: { member: "a", weight: 1 } }], { cost: 1, dryRun: false });
    expect((await keysUnder(redis, p)).length).toBeGreaterThanOrEqual(7);
    expect(await keysWithoutTtl(redis, p)).toEqual([]);
    await new Promise((r) => setTimeout(r, 700));
    expect(await keysUnder(redis, p)).toEqual([]);
  });

  it("a sliding window counter's hash never holds more than its k + 1 live sub-windows (slid-out ones are dropped on Redis time)", async () => {
    const store = createRedisStore(redis); // real Redis time: the production expiry and drop branch
    const p = `${prefix}swc${randomBytes(3).toString("hex")}:`;
    for (const precision of [1, 3]) {
      const c = limitCheck(p, { algorithm: "sliding_window_counter", limit: 1_000, windowMs: 150, precision });
      const sizes: number[] = [];
      // Writes in consecutive sub-windows for several windows: each opening write drops what slid out.
      for (let i = 0; i < 24; i++) {
        await store.check([c], { cost: 1, dryRun: false });
        sizes.push(await redis.hlen(c.key));
        await new Promise((r) => setTimeout(r, Math.ceil(150 / precision / 2)));
      }
      expect(Math.max(...sizes), `precision ${precision}: ${sizes.join(",")}`).toBeLessThanOrEqual(precision + 1);
      await redis.del(c.key);
    }
  });

  it("the accuracy meter's exact log takes one entry per request, whatever its cost: a cost of 1,000,000 is one ZADD, not a million (issue #30)", async () => {
    const store = createRedisStore(redis); // Redis time, as in production
    const c: LimitCheck = { ...limitCheck(prefix, { algorithm: "sliding_window_counter", limit: 2_000_000, windowMs: 60_000 }), exactLog: true };
    const startedMs = performance.now();
    const first = await store.check([c], { cost: 1_000_000, dryRun: false });
    expect(first.outcomes[0]!.accuracy).toEqual({ limitAdmitted: true, exactAdmitted: true });
    expect(performance.now() - startedMs).toBeLessThan(1_000);
    expect(await redis.zcard(`${c.key}:x`)).toBe(1);
    // The log still counts units: 1,000,000 + 999,999 fits 2,000,000, one more unit does not.
    expect((await store.check([c], { cost: 999_999, dryRun: false })).outcomes[0]!.accuracy).toEqual({ limitAdmitted: true, exactAdmitted: true });
    expect((await store.check([c], { cost: 2, dryRun: false })).outcomes[0]!.accuracy?.exactAdmitted).toBe(false);
    expect(await redis.zcard(`${c.key}:x`)).toBe(2);
  });

  it("1,000 checks at once over 3 connections against a limit of 100 pass exactly 100, 20 runs of 20", async () => {
    const clients = [0, 1, 2].map(() => createRedisClient({ url: testRedisUrl(), commandTimeoutMs: 5_000 }));
    const stores = clients.map((c) => createRedisStore(c));
    try {
      const results: number[] = [];
      for (let run = 0; run < 20; run++) {
        const algorithm = ALGORITHMS[run % ALGORITHMS.length];
        const c = limitCheck(prefix, { algorithm, limit: 100, windowMs: 3_600_000, burst: 100, leaseTtlMs: 60_000 });
        const decisions = await Promise.all(
          Array.from({ length: 1_000 }, (_, i) => stores[i % 3].check([c], { cost: 1, dryRun: false })),
        );
        results.push(decisions.filter((d) => d.allowed).length);
      }
      expect(results).toEqual(Array(20).fill(100));
    } finally {
      clients.forEach((c) => c.disconnect());
    }
  });
});

describe("Redis store scripts and functions (own redis-server: FUNCTION FLUSH and SCRIPT FLUSH must not disturb the shared one)", () => {
  let server: OwnRedis;
  let own: Redis;
  beforeAll(async () => {
    server = await startOwnRedis();
    own = new Redis(server.url, { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    own.disconnect();
    await server.stop();
  });

  it("DECIDE is a Redis Function: loaded once on first use and after FUNCTION FLUSH, the call resent only then, the request counted once", async () => {
    await own.function("FLUSH");
    const store = createRedisStore(own);
    const c = limitCheck("f:", { algorithm: "fixed_window", limit: 10, windowMs: 60_000 });
    await store.check([c], { cost: 1, dryRun: false });
    // First use: the node answered "Function not found" (nothing ran), the library was loaded, the call sent again.
    expect(store.scriptStats()).toEqual({ fcall: 2, functionLoads: 1, evalsha: 0, eval: 0 });
    await store.check([c], { cost: 1, dryRun: false });
    expect(store.scriptStats()).toEqual({ fcall: 3, functionLoads: 1, evalsha: 0, eval: 0 });
    await own.function("FLUSH"); // as a restarted node without persistence
    const d = await store.check([c], { cost: 1, dryRun: false });
    expect(store.scriptStats()).toEqual({ fcall: 5, functionLoads: 2, evalsha: 0, eval: 0 });
    expect(d.outcomes[0].remaining).toBe(7); // 3 requests, 3 units: nothing counted twice
    // Another store (another decision server) finds the library there: no load.
    const other = createRedisStore(own);
    await other.check([c], { cost: 1, dryRun: false });
    expect(other.scriptStats()).toEqual({ fcall: 1, functionLoads: 0, evalsha: 0, eval: 0 });
  });

  it("where FUNCTION is refused (an ACL without it), DECIDE runs as scripts: after SCRIPT FLUSH one EVAL, the request counted once", async () => {
    await own.call("ACL", "SETUSER", "nofunctions", "on", "nopass", "~*", "&*", "+@all", "-function");
    const limited = new Redis(server.url, { username: "nofunctions", password: "x", maxRetriesPerRequest: 1 });
    try {
      await own.function("FLUSH");
      const store = createRedisStore(limited);
      const c = limitCheck("s:", { algorithm: "fixed_window", limit: 10, windowMs: 60_000 });
      await store.check([c], { cost: 1, dryRun: false });
      // FCALL found nothing, the load was refused (NOPERM): the script, EVALSHA → NOSCRIPT → EVAL.
      expect(store.scriptStats()).toEqual({ fcall: 1, functionLoads: 1, evalsha: 1, eval: 1 });
      await store.check([c], { cost: 1, dryRun: false });
      expect(store.scriptStats()).toEqual({ fcall: 1, functionLoads: 1, evalsha: 2, eval: 1 });
      await own.script("FLUSH");
      const d = await store.check([c], { cost: 1, dryRun: false });
      expect(store.scriptStats()).toEqual({ fcall: 1, functionLoads: 1, evalsha: 3, eval: 2 });
      expect(d.outcomes[0].remaining).toBe(7);
    } finally {
      limited.disconnect();
      await own.call("ACL", "DELUSER", "nofunctions");
    }
  });

  it("decisions of one event-loop turn go as one call, each still all-or-nothing", async () => {
    const store = createRedisStore(own);
    const shared = limitCheck("b:", { algorithm: "fixed_window", limit: 100, windowMs: 3_600_000 });
    const roomy = limitCheck("b:", { algorithm: "sliding_window_counter", limit: 1_000, windowMs: 3_600_000 });
    const full = limitCheck("b:", { algorithm: "token_bucket", limit: 1, windowMs: 3_600_000, burst: 1 });
    await store.check([full], { cost: 1, dryRun: false }); // spent: the next check on it denies
    const before = store.scriptStats().fcall;

    const [many, mixed, dry] = await Promise.all([
      Promise.all(Array.from({ length: 150 }, () => store.check([shared], { cost: 1, dryRun: false }))),
      store.check([roomy, full], { cost: 1, dryRun: false }), // denied by `full`: `roomy` keeps its unit
      store.check([roomy], { cost: 5, dryRun: true }),
    ]);

    // 152 decisions, at most 128 per call: two calls, not 152.
    expect(store.scriptStats().fcall - before).toBe(2);
    const allowed = many.filter((d) => d.allowed);
    expect(allowed).toHaveLength(100);
    // Each decision saw the ones before it in the same call: remaining counts down 99 … 0.
    expect(allowed.map((d) => d.outcomes[0]!.remaining).sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(mixed.allowed).toBe(false);
    expect(mixed.outcomes[1]!.reason).toBe("rate_limited");
    expect(dry.allowed).toBe(true);
    const after = await store.check([roomy], { cost: 1, dryRun: true });
    expect(after.outcomes[0]!.remaining).toBe(1_000); // a dry run shows what is left: nothing was consumed
  });

  it("a decision whose script fails rejects alone; the others in the same call are answered", async () => {
    const store = createRedisStore(own);
    await own.set("b:{t:y}:wrongtype:1", "x");
    const bad: LimitCheck = { ...limitCheck("b:", { algorithm: "sliding_window_log" }), key: "b:{t:y}:wrongtype:1" };
    const good = limitCheck("b:", { algorithm: "fixed_window", limit: 10, windowMs: 60_000 });
    await store.check([limitCheck("b:", { algorithm: "sliding_window_log" })], { cost: 1, dryRun: true }); // the library is loaded
    const before = store.scriptStats().fcall;
    const [first, failed, last] = await Promise.allSettled([
      store.check([good], { cost: 1, dryRun: false }),
      store.check([bad], { cost: 1, dryRun: false }),
      store.check([good], { cost: 1, dryRun: false }),
    ]);
    expect(store.scriptStats().fcall - before).toBe(1);
    expect(failed.status === "rejected" && String(failed.reason)).toMatch(/WRONGTYPE/);
    expect(first.status === "fulfilled" && first.value.outcomes[0]!.remaining).toBe(9);
    expect(last.status === "fulfilled" && last.value.outcomes[0]!.remaining).toBe(8);
    await own.del("b:{t:y}:wrongtype:1");
  });

  it("an error other than a missing function is not retried (the call may have run)", async () => {
    const store = createRedisStore(own);
    await own.set("f:{t:x}:wrongtype:" + "1", "x");
    const c: LimitCheck = { ...limitCheck("f:", { algorithm: "sliding_window_log" }), key: "f:{t:x}:wrongtype:1" };
    await own.function("FLUSH");
    await expect(store.check([c], { cost: 1, dryRun: false })).rejects.toThrow(/WRONGTYPE/);
    // The missing function is loaded and the call sent again once; the WRONGTYPE is not retried.
    expect(store.scriptStats()).toEqual({ fcall: 2, functionLoads: 1, evalsha: 0, eval: 0 });
    await expect(store.check([c], { cost: 1, dryRun: false })).rejects.toThrow(/WRONGTYPE/);
    expect(store.scriptStats()).toEqual({ fcall: 3, functionLoads: 1, evalsha: 0, eval: 0 });
    await own.del("f:{t:x}:wrongtype:1");
  });
});

