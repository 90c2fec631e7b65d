/**
 * `regions: shared` against a real Redis and the real DECIDE, on Redis server time: the window
 * lib/regions/replication.ts names for a unit is exactly the counter the Lua twins wrote, and units
 * applied there by another region are counted by this region's next decisions.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "@/test/helpers";
import { replicatedWindow } from "./replication";
import type { LimitCheck } from "../store/types";
import { createRedisStore } from "../store/redis/index";
import { createReplicationApplier } from "./replication-apply";
import { replicatedCheck } from "./testing/checks";

const prefix = `${testRedisPrefix()}repl${randomBytes(3).toString("hex")}:`;
let redis: Redis;

const check = (name: string, over: Partial<LimitCheck> = {}): LimitCheck => replicatedCheck(`${prefix}{t:acme}:c:${name}:_`, { limit: 10, burst: 10, windowMs: 60_000, ...over });

beforeAll(() => {
  redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  const left = await redis.keys(`${prefix}*`);
  if (left.length > 0) await redis.unlink(...left);
  redis.disconnect();
});

/**
 * DECIDE sets a window's expiry as PEXPIRE (end − now) with `now` its TIME in whole ms, which Redis
 * adds to its own clock in µs: the instant lands up to 1 ms after the window's end.
 */
function expectExpiry(actualMs: number, windowEndMs: number): void {
  expect(actualMs - windowEndMs).toBeGreaterThanOrEqual(0);
  expect(actualMs - windowEndMs).toBeLessThanOrEqual(1);
}

/** Decides `n` single-unit requests; the answers that were allowed. */
async function admit(c: LimitCheck, n: number) {
  const store = createRedisStore(redis);
  const out = [];
  for (let i = 0; i < n; i++) out.push(await store.check([c], { cost: 1, dryRun: false }));
  return out;
}

describe("replicated units on a real Redis", () => {
  it("name the fixed window's counter DECIDE wrote, with its expiry", async () => {
    const c = check(`fw${randomBytes(2).toString("hex")}`);
    const [d] = await admit(c, 1);
    const w = replicatedWindow(c, d!.nowMs)!;
    expect(await redis.get(w.key)).toBe("1");
    expectExpiry(await redis.pexpiretime(w.key), w.expireAtMs);
  });

  it("name the sliding window counter's sub-window field DECIDE wrote, with its expiry", async () => {
    const c = check(`swc${randomBytes(2).toString("hex")}`, { algorithm: "sliding_window_counter", precision: 6 });
    const [d] = await admit(c, 1);
    const w = replicatedWindow(c, d!.nowMs)!;
    expect(await redis.hget(w.key, w.field)).toBe("1");
    expectExpiry(await redis.pexpiretime(w.key), w.expireAtMs);
  });

  it("once applied, are counted by this region's next decisions (fixed window and sliding window counter)", async () => {
    const apply = createReplicationApplier(redis);
    for (const algorithm of ["fixed_window", "sliding_window_counter"] as const) {
      const c = check(`${algorithm}${randomBytes(2).toString("hex")}`, { algorithm });
      const [first] = await admit(c, 1);
      // Another region admitted 7 in the same window: 1 + 7 of 10, so 2 more pass here, then none.
      const applied = await apply([{ ...replicatedWindow(c, first!.nowMs)!, units: 7 }]);
      expect(applied.units).toBe(7);
      expect(applied.nowMs).toBeGreaterThanOrEqual(first!.nowMs);
      const next = await admit(c, 3);
      expect(next.map((d) => d.allowed)).toEqual([true, true, false]);
    }
  });

  it("skip a window that already ended, and never shorten a counter's expiry", async () => {
    const apply = createReplicationApplier(redis);
    const key = `${prefix}{t:acme}:c:ended:_:0`;
    expect((await apply([{ key, field: "", units: 5, expireAtMs: 1_000, subWindows: 0 }])).units).toBe(0);
    expect(await redis.exists(key)).toBe(0);

    const c = check(`late${randomBytes(2).toString("hex")}`, { algorithm: "sliding_window_counter", windowMs: 60_000 });
    const [d] = await admit(c, 1);
    const w = replicatedWindow(c, d!.nowMs)!;
    // A late batch for the sub-window before: counted, but the expiry the newer write set stays.
    await apply([{ key: w.key, field: String(Number(w.field) - 1), units: 2, expireAtMs: w.expireAtMs - 60_000, subWindows: 1 }]);
    expectExpiry(await redis.pexpiretime(w.key), w.expireAtMs);
    expect(await redis.hget(w.key, String(Number(w.field) - 1))).toBe("2");
  });

  it("give a counter only remote writes created its expiry, and drop the sub-windows that slid out", async () => {
    const apply = createReplicationApplier(redis);
    const key = `${prefix}{t:acme}:c:remote${randomBytes(2).toString("hex")}:_`;
    const nowMs = Date.now();
    const sub = 10_000;
    const i = Math.floor(nowMs / sub);
    await redis.hset(key, String(i - 2), "4"); // slid out of a one-sub-window counter
    await apply([{ key, field: String(i), units: 3, expireAtMs: (i + 2) * sub, subWindows: 1 }]);
    expect(await redis.hgetall(key)).toEqual({ [String(i)]: "3" });
    expect(await redis.pexpiretime(key)).toBe((i + 2) * sub);
  });
});
