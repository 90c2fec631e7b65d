import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { indexKeys, KeyIndex } from "./key-index";
import { keys } from "./keys";

let redis: Redis;
beforeAll(() => {
  // This file's own namespace: other suites index keys under the run's prefix too.
  process.env.SLUICE_REDIS_PREFIX = `${testRedisPrefix()}ki${randomBytes(3).toString("hex")}:`;
  redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  await redis.del(keys.keyIndex());
  redis.disconnect();
});

describe("key index warm-up", () => {
  it("loads a small index whole, so the first lookups need no Redis command", async () => {
    await indexKeys(redis, [
      { keyHash: "a".repeat(64), tenant: "acme" },
      { keyHash: "b".repeat(64), tenant: "globex" },
    ]);
    const index = new KeyIndex(redis);
    expect(index.peek("a".repeat(64))).toBeUndefined();
    expect(await index.warm()).toBe(2);
    expect([index.peek("a".repeat(64)), index.peek("b".repeat(64)), index.peek("c".repeat(64))]).toEqual(["acme", "globex", undefined]);
  });

  it("loads nothing when the index is larger than the limit", async () => {
    const index = new KeyIndex(redis);
    expect(await index.warm(1)).toBe(0);
    expect(index.size).toBe(0);
  });

  it("keeps nothing when a revocation arrives while it reads (no stale key can come back)", async () => {
    const index = new KeyIndex(redis);
    const warming = index.warm();
    index.evict("a".repeat(64)); // the revocation message, while HLEN / HGETALL are in flight
    expect(await warming).toBe(0);
    expect(index.peek("a".repeat(64))).toBeUndefined();
  });
});
