/**
 * `regions: shared`, the applying side (docs/regions.md): the units another region admitted,
 * added to this region's counter of the same window (lib/regions/replication.ts names it), with the
 * expiry the local commit would give it — in one script per hash slot, so a window's count and
 * its expiry change together.
 */
import type { RedisClient } from "../redis/client";
import type { ReplicatedUnits } from "./replication";
import { hashTag } from "../store/redis/cluster";
import { createLoader, isCluster, script } from "../store/redis/loader";

/**
 * KEYS: the counters; ARGV per key: field ('' for a fixed window's STRING), units, expireAtMs,
 * sub-windows. A window that already ended here (Redis TIME) is skipped: nobody counts it any more,
 * and PEXPIREAT in the past would delete a sliding counter's newer sub-windows. A sub-window field
 * this write creates drops the ones that slid out, as the local commit that opens a sub-window does
 * (sliding_window_counter_commit), so a counter only remote writes open still stays small. The
 * expiry only ever moves later: a late batch never shortens what a newer local write set.
 * Returns {now, units applied}.
 */
const APPLY_LUA = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local applied = 0
for i = 1, #KEYS do
  local key, a = KEYS[i], (i - 1) * 4
  local field, units, expireAt, k = ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  if expireAt > now then
    if field == '' then
      redis.call('INCRBY', key, units)
    elseif redis.call('HINCRBY', key, field, units) == units then
      local sub, stale = tonumber(field), {}
      for j = sub - 2 * k, sub - k - 1 do stale[#stale + 1] = string.format('%.0f', j) end
      if #stale > 0 then redis.call('HDEL', key, unpack(stale)) end
    end
    if redis.call('PEXPIRETIME', key) < expireAt then redis.call('PEXPIREAT', key, expireAt) end
    applied = applied + units
  end
end
return {now, applied}`;
const APPLY = script(APPLY_LUA);

export interface Applied {
  /** This region's Redis TIME when the (last) script ran (ms). */
  nowMs: number;
  /** Units added; the rest belonged to windows that had ended here. */
  units: number;
}

export type ReplicationApplier = (entries: readonly ReplicatedUnits[]) => Promise<Applied>;

export function createReplicationApplier(redis: RedisClient): ReplicationApplier {
  const loader = createLoader(redis);
  const run = async (entries: readonly ReplicatedUnits[]): Promise<Applied> => {
    const keys = entries.map((e) => e.key);
    const args = entries.flatMap((e) => [e.field, String(e.units), String(e.expireAtMs), String(e.subWindows)]);
    const [nowMs, units] = (await loader.run(APPLY, keys, args)) as [number, number];
    return { nowMs: Number(nowMs), units: Number(units) };
  };
  return async (entries) => {
    if (entries.length === 0) return { nowMs: 0, units: 0 };
    if (!isCluster(redis)) return run(entries);
    // Redis Cluster: one script per hash slot (each counter key carries its tenant's or cap's tag).
    const bySlot = new Map<string, ReplicatedUnits[]>();
    for (const e of entries) {
      const tag = hashTag(e.key);
      const group = bySlot.get(tag);
      if (group) group.push(e);
      else bySlot.set(tag, [e]);
    }
    const results = await Promise.all([...bySlot.values()].map(run));
    return { nowMs: Math.max(...results.map((r) => r.nowMs)), units: results.reduce((n, r) => n + r.units, 0) };
  };
}
