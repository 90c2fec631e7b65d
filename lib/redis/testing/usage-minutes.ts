/** Test kit: the usage minutes the decision servers flushed (lib/redis/usage.ts), read back for assertions. */
import { keys } from "../keys";
import type { RedisClient } from "../client";
import { parseUsageHash, type UsageMinute } from "../usage-format";

/** One minute's aggregates, parsed as the rollup parses them. */
export async function readUsageMinute(redis: RedisClient, minute: number): Promise<UsageMinute> {
  return parseUsageHash(minute, await redis.hgetall(keys.usageMinute(minute)));
}

/** The minute starts waiting to be drained, ascending. */
export async function listUsageMinutes(redis: RedisClient): Promise<number[]> {
  const members = await redis.smembers(keys.usageMinutes());
  return members
    .map(Number)
    .filter((n) => Number.isSafeInteger(n))
    .sort((a, b) => a - b);
}
