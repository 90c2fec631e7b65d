/**
 * Which regions a region still hears from (lib/regions/region-heard.ts), against a real Redis:
 * the ledger every decision process of a region shares — what one process heard is what every other
 * reads, stamped with Redis's own clock, and it expires only after a week without any write.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "@/test/helpers";
import { keys } from "../redis/keys";
import { createHeardLedger } from "./region-heard";

const prefix = `${testRedisPrefix()}heard${randomBytes(3).toString("hex")}:`;
let redis: Redis;

beforeAll(() => {
  redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  await redis.unlink(keys.regionHeard(prefix));
  redis.disconnect();
});

describe("the ledger of when each region was last heard from", () => {
  it("stamps what one process heard with Redis TIME, and every process reads every region's last arrival", async () => {
    const writer = createHeardLedger(redis, prefix);
    const reader = createHeardLedger(redis, prefix);
    expect((await reader([])).heardMs.size).toBe(0);
    const [seconds, micros] = await redis.time();
    const redisNowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const wrote = await writer(["eu", "ap"]);
    expect(wrote.nowMs).toBeGreaterThanOrEqual(redisNowMs);
    expect(wrote.heardMs).toEqual(new Map([["eu", wrote.nowMs], ["ap", wrote.nowMs]]));
    await new Promise((r) => setTimeout(r, 20));
    const later = await writer(["eu"]);
    const read = await reader([]);
    expect(read.nowMs).toBeGreaterThanOrEqual(later.nowMs);
    expect(read.heardMs.get("eu")).toBe(later.nowMs);
    expect(read.heardMs.get("ap")).toBe(wrote.nowMs);
    const ttlMs = await redis.pttl(keys.regionHeard(prefix));
    expect(ttlMs).toBeGreaterThan(6 * 24 * 3_600_000);
    expect(ttlMs).toBeLessThanOrEqual(7 * 24 * 3_600_000);
  });
});
