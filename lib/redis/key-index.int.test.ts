import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { KeyIndex, KeyIndexMissingError } from "./key-index";
import { keys, PUBLISHED_MARKER } from "./keys";

let redis: Redis;
beforeAll(() => {
  // This file's own namespace: other suites index keys under the run's prefix too.
  process.env.SLUICE_REDIS_PREFIX = `${testRedisPrefix()}ki${randomBytes(3).toString("hex")}:`;
  redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
});
// The index as publish writes it: with its marker (lib/redis/keys.ts).
beforeEach(async () => {
  await redis.hset(keys.keyIndex(), PUBLISHED_MARKER, "1");
});
/** Adds keys to the index as publish does (lib/redis/policy.ts). */
async function indexKeys(client: Redis, entries: { keyHash: string; tenant: string }[]): Promise<void> {
  await client.hset(keys.keyIndex(), Object.fromEntries(entries.map((e) => [e.keyHash, e.tenant])));
}
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

describe("key index after a new policy version (markStale)", () => {
  const [a, b, gone] = ["d".repeat(64), "e".repeat(64), "f".repeat(64)];

  async function settle(index: KeyIndex, hash: string, expected: string | null): Promise<void> {
    const deadline = Date.now() + 2_000;
    while (Date.now() < deadline) {
      if (index.peek(hash) === expected) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`${hash.slice(0, 4)} never became ${expected}`);
  }

  it("keeps answering every cached key at once, then corrects them from Redis with batched HMGETs", async () => {
    await indexKeys(redis, [
      { keyHash: a, tenant: "acme" },
      { keyHash: b, tenant: "globex" },
      { keyHash: gone, tenant: "initech" },
    ]);
    const { client, calls } = await countingClient();
    const index = new KeyIndex(client);
    for (const h of [a, b, gone]) await index.fetch(h);
    // The publish rewrote the index: b moved (a restored backup, say), `gone` was removed.
    await redis.hset(keys.keyIndex(), b, "umbrella");
    await redis.hdel(keys.keyIndex(), gone);
    index.markStale();

    // No request waits: every key still answers from the cache, synchronously.
    expect([index.peek(a), index.peek(b), index.peek(gone)]).toEqual(["acme", "globex", "initech"]);
    await settle(index, gone, null);
    await settle(index, b, "umbrella");
    expect(index.peek(a)).toBe("acme");
    // The three keys queued in one turn went to Redis as one HMGET, after the three lookups above.
    expect(calls).toEqual(["hmget", "hmget", "hmget", "hmget"]);
    // Fresh again: no further re-read.
    index.peek(a);
    await new Promise((r) => setTimeout(r, 50));
    expect(calls).toHaveLength(4);
    client.disconnect();
  });

  it("never lets a background re-read bring back a key revoked while it was in flight", async () => {
    await indexKeys(redis, [{ keyHash: a, tenant: "acme" }]);
    const index = new KeyIndex(redis);
    await index.fetch(a);
    index.markStale();
    expect(index.peek(a)).toBe("acme"); // queues the re-read for the next turn
    await redis.hdel(keys.keyIndex(), a);
    index.evict(a); // the revocation message arrives first
    await new Promise((r) => setTimeout(r, 50));
    expect(index.peek(a)).toBeUndefined();
  });
});

describe("key index when Redis loses it (issue #17, defects 1 and 2)", () => {
  const [known, unknown, later] = ["1".repeat(64), "2".repeat(64), "3".repeat(64)];

  async function settled(): Promise<void> {
    await new Promise((r) => setTimeout(r, 100));
  }

  it("a lookup against a lost index is a store failure, not an unknown key; a published empty index answers unknown", async () => {
    await redis.del(keys.keyIndex()); // Redis restarted empty
    const index = new KeyIndex(redis);
    await expect(index.fetch(unknown)).rejects.toBeInstanceOf(KeyIndexMissingError);
    expect(index.peek(unknown)).toBeUndefined(); // nothing cached: the next request asks again
    // A key created after the loss (create-api-key writes one field) is found, marker or not.
    await indexKeys(redis, [{ keyHash: later, tenant: "acme" }]);
    expect(await index.fetch(later)).toBe("acme");
    // Published again (the restore job, or a publish): the marker is back, an absent key is unknown.
    await redis.hset(keys.keyIndex(), PUBLISHED_MARKER, "1");
    expect(await index.fetch(unknown)).toBeNull();
    expect(index.peek(unknown)).toBeNull();
  });

  it("a key it resolved once keeps answering past its TTL, while Redis has lost the index and while Redis is unreachable", async () => {
    await indexKeys(redis, [{ keyHash: known, tenant: "acme" }]);
    // Like the decision server's connection: no offline queue, so an unreachable Redis fails at once.
    const client = new Redis(testRedisUrl(), { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    client.on("error", () => undefined);
    await new Promise((r) => client.once("ready", r));
    let nowMs = 1_000_000;
    const index = new KeyIndex(client, { positiveTtlMs: 1_000, now: () => nowMs });
    expect(await index.fetch(known)).toBe("acme");
    // Past its TTL with the index lost: answered, re-read in the background, kept.
    nowMs += 60_000;
    await redis.del(keys.keyIndex());
    expect(index.peek(known)).toBe("acme");
    await settled();
    expect(index.peek(known)).toBe("acme");
    // markStale (a new policy, a resubscription) does not drop it either.
    index.markStale();
    expect(index.peek(known)).toBe("acme");
    await settled();
    // Redis unreachable: still answered.
    client.disconnect();
    nowMs += 60_000;
    expect(index.peek(known)).toBe("acme");
    await settled();
    expect(index.peek(known)).toBe("acme");
  });

  it("a re-read against a published index that no longer holds the key does drop it", async () => {
    await indexKeys(redis, [{ keyHash: known, tenant: "acme" }]);
    let nowMs = 1_000_000;
    const index = new KeyIndex(redis, { positiveTtlMs: 1_000, now: () => nowMs });
    expect(await index.fetch(known)).toBe("acme");
    await redis.hdel(keys.keyIndex(), known); // revoked, its message lost
    nowMs += 60_000;
    expect(index.peek(known)).toBe("acme");
    await settled();
    expect(index.peek(known)).toBeNull();
  });
});

/** A connection of its own that records the key index commands it sends. */
async function countingClient(): Promise<{ client: Redis; calls: string[] }> {
  const client = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
  // Connected first: a command queued while connecting passes sendCommand twice.
  await client.ping();
  const calls: string[] = [];
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    // The key index's own commands (not the connection handshake's).
    if (["hget", "hmget", "hlen", "hscan"].includes(command.name)) calls.push(command.name);
    return send(command, stream);
  };
  return { client, calls };
}
