/**
 * Helpers of the Redis store's integration tests: read every key under a prefix (type-aware, to
 * compare counters before and after), and list keys without a TTL.
 */
import type { Cluster, Redis } from "ioredis";

type Client = Redis | Cluster;

async function scanAll(redis: Client, pattern: string): Promise<string[]> {
  const nodes = "nodes" in redis && typeof redis.nodes === "function" ? (redis as Cluster).nodes("master") : [redis as Redis];
  const found: string[] = [];
  for (const node of nodes) {
    let cursor = "0";
    do {
      const [next, batch] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      cursor = next;
      found.push(...batch);
    } while (cursor !== "0");
  }
  return found.sort();
}

export async function keysUnder(redis: Client, prefix: string): Promise<string[]> {
  return scanAll(redis, `${prefix.replace(/[*?[\]\\]/g, "\\$&")}*`);
}

/** Every key under `prefix` → its value (string, hash, or zset with scores), for equality checks. */
export async function snapshot(redis: Client, prefix: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of await keysUnder(redis, prefix)) {
    const type = await redis.type(key);
    if (type === "string") out[key] = await redis.get(key);
    else if (type === "hash") out[key] = await redis.hgetall(key);
    else if (type === "zset") out[key] = await redis.zrange(key, 0, "-1", "WITHSCORES");
    else out[key] = type;
  }
  return out;
}

/** Keys under `prefix` without a TTL (PTTL -1; 0 is a key expiring this very ms, -2 one just gone). */
export async function keysWithoutTtl(redis: Client, prefix: string): Promise<string[]> {
  const bad: string[] = [];
  for (const key of await keysUnder(redis, prefix)) {
    const pttl = await redis.pttl(key);
    if (pttl === -1) bad.push(`${key} (pttl ${pttl})`);
  }
  return bad;
}
