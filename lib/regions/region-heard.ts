/**
 * `regions: shared`, which regions this region still hears from (docs/regions.md, "A partial cut"):
 * every batch and heartbeat another region sends is applied here by one decision process of this
 * region (the region's durable consumer hands each message to one), so the time it arrived is kept
 * in this region's Redis (`keys.regionHeard()`), where every decision process of the region reads it.
 */
import type { RedisClient } from "../redis/client";
import { keys } from "../redis/keys";
import { createLoader, script } from "../store/redis/loader";

/** The ledger outlives any silence worth judging; it is refreshed by every write. */
const HEARD_TTL_MS = 7 * 24 * 3_600_000;

/**
 * KEYS[1]: the ledger; ARGV[1]: its TTL; ARGV[2…]: the regions heard from since the last call, each
 * set to this Redis's TIME (ms). Returns {now, {region, ms, region, ms, …}}: one clock for "when"
 * and "now", whichever process wrote it.
 */
const HEARD = script(`local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
if #ARGV > 1 then
  for i = 2, #ARGV do redis.call('HSET', KEYS[1], ARGV[i], now) end
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return {now, redis.call('HGETALL', KEYS[1])}`);

export interface HeardLedger {
  /** This Redis's TIME (ms). */
  nowMs: number;
  /** Per region, when its last batch or heartbeat arrived in this region (ms, the same clock). */
  heardMs: Map<string, number>;
}

/** Records the regions heard from (may be none) and reads back when every region was last heard from, in one call. */
export function createHeardLedger(redis: RedisClient, prefix?: string): (heard: readonly string[]) => Promise<HeardLedger> {
  const loader = createLoader(redis);
  const key = keys.regionHeard(prefix);
  return async (heard) => {
    const [now, flat] = (await loader.run(HEARD, [key], [String(HEARD_TTL_MS), ...heard])) as [string | number, string[]];
    const heardMs = new Map<string, number>();
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const ms = Number(flat[i + 1]);
      if (Number.isFinite(ms)) heardMs.set(flat[i]!, ms);
    }
    return { nowMs: Number(now), heardMs };
  };
}
