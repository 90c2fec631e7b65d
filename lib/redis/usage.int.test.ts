import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix } from "../../test/helpers";
import { type OwnRedis, startOwnRedis } from "../processes/redis-server";
import { keys } from "./keys";
import { FLUSH_CHUNK_FIELDS, UsageRecorder } from "./usage";
import { minuteStartMs, usageFields } from "./usage-format";

const MINUTE = minuteStartMs(Date.now());
const decision = (tenant: string) => ({ atMs: MINUTE + 1_000, tenant, tier: "free", operation: "read", outcome: "allowed" as const, keyPrefix: "abcdef012345", latencyMs: 1 });

describe("usage flush: exactly once (own redis-server: it is killed)", () => {
  let own: OwnRedis;
  let redis: Redis;
  const prefix = `${testRedisPrefix()}uf${randomBytes(3).toString("hex")}:`;
  const field = usageFields.decision("acme", "free", "read", "allowed");
  const count = async () => Number((await redis.hget(keys.usageMinute(MINUTE, prefix), field)) ?? 0);

  beforeAll(async () => {
    own = await startOwnRedis();
    redis = new Redis(own.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 50 });
    redis.on("error", () => undefined); // refused connections while it is killed
    await new Promise((r) => redis.once("ready", r));
  });
  afterAll(async () => {
    redis.disconnect();
    await own.stop();
  });

  it("a flush sent twice with the same id (its reply lost) counts once", async () => {
    const recorder = new UsageRecorder(redis, prefix);
    const counts = new Map([[MINUTE, new Map([[field, 7]])]]);
    await recorder.send("flush-1", counts);
    await recorder.send("flush-1", counts);
    expect(await count()).toBe(7);
    await recorder.send("flush-2", counts);
    expect(await count()).toBe(14);
    expect(await redis.ttl(keys.usageMinute(MINUTE, prefix) + ":flushes")).toBeGreaterThan(0);
    expect(await redis.sismember(keys.usageMinutes(prefix), String(MINUTE))).toBe(1);
  });

  it("a flush of many fields goes in calls of at most FLUSH_CHUNK_FIELDS fields, each applied once when resent", async () => {
    const recorder = new UsageRecorder(redis, prefix);
    const fields = new Map(Array.from({ length: FLUSH_CHUNK_FIELDS * 3 + 10 }, (_, i) => [usageFields.key("big", i.toString(16).padStart(12, "0"), "allowed"), i + 1] as const));
    await redis.config("RESETSTAT");
    await recorder.send("flush-big", new Map([[MINUTE, fields]]));
    await recorder.send("flush-big", new Map([[MINUTE, fields]])); // its reply lost: resent whole
    const stored = await redis.hgetall(keys.usageMinute(MINUTE, prefix));
    for (const [name, n] of fields) expect(Number(stored[name])).toBe(n);
    const calls = Number(/cmdstat_evalsha:calls=(\d+),/.exec(await redis.info("commandstats"))?.[1]);
    expect(calls).toBe(2 * 4); // 4 chunks per send
  });

  it("after SCRIPT FLUSH a flush reloads its script (SCRIPT LOAD, not EVAL) and counts once", async () => {
    const recorder = new UsageRecorder(redis, prefix);
    const before = await count();
    await redis.script("FLUSH");
    await redis.config("RESETSTAT");
    await recorder.send("flush-after-script-flush", new Map([[MINUTE, new Map([[field, 3]])]]));
    expect(await count()).toBe(before + 3);
    const info = await redis.info("commandstats");
    expect(info).not.toMatch(/cmdstat_eval:/); // a decision server's EVAL count stays the decisions' own
    expect(info).toMatch(/cmdstat_script\|load:calls=1,/);
  });

  it("a flush that fails keeps its counts and is delivered once Redis is back, exactly", async () => {
    const recorder = new UsageRecorder(redis, prefix);
    const before = await count();
    for (let i = 0; i < 5; i++) recorder.record(decision("acme"));
    await own.kill();
    await recorder.flush(); // fails: Redis is down
    for (let i = 0; i < 3; i++) recorder.record(decision("acme")); // newer counts wait behind it
    expect(recorder.snapshot().get(MINUTE)?.get(field)).toBe(8);
    await own.start();
    await new Promise((r) => (redis.status === "ready" ? r(null) : redis.once("ready", r)));
    await recorder.flush(); // the failed batch, same id
    await recorder.flush(); // the newer counts
    await recorder.flush(); // nothing left
    expect(recorder.snapshot().size).toBe(0);
    // own.start() brings an empty server back: only what was flushed after it counts.
    expect(before).toBeGreaterThan(0);
    expect(await count()).toBe(8);
  });
});
