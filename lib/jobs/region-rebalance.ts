/**
 * Re-balancing the shares of `split` limits (docs/regions.md#split-each-region-its-share): every
 * SLUICE_REGION_REBALANCE_MS the worker reads each region's demand for each split limit since its
 * last pass (the decisions counted in the region's usage hash of the current minute,
 * lib/policy/region-rebalance.ts demandOf), plans the next shares document (planShares: lower what
 * falls at once, raise what grows after the limit's settle time) and writes it to every region's
 * Redis. A region that cannot be read keeps everyone's weights where they are; a write that missed a
 * region keeps every weight from growing until a write reaches them all.
 */
import type { Db } from "../db/client";
import { latestPolicyVersion } from "../db/policy-repo";
import { parseCompiledPolicy } from "../policy/compiled-schema";
import { planShares, splitTargets, demandOf, type SplitTarget } from "../policy/region-rebalance";
import type { RegionShares } from "../policy/region-shares";
import { keys } from "../redis/keys";
import { readRegionShares, REGION_SHARES_POLL_MS, writeRegionShares } from "../redis/region-shares";
import { withTimeout, writeToRegions, type RegionTarget } from "../redis/regions";
import { minuteStartMs } from "../redis/usage-format";

/** What one worker remembers between passes: each region's counts so far this minute, and whether the last write reached every region. */
export interface RebalanceMemory {
  counted: Map<string, { minute: number; total: number }>;
  lastWriteComplete: boolean;
}

/** A worker that just started does not know what every region holds: nothing grows on its first pass. */
export function newRebalanceMemory(): RebalanceMemory {
  return { counted: new Map(), lastWriteComplete: false };
}

export interface RebalanceResult {
  /** null: nothing to do (no published policy, or no split limit). */
  shares: RegionShares | null;
  /** demand[t][r] since the last pass (null: the region could not be read). */
  demand: (number | null)[][];
  missed: string[];
}


/** Each target's demand in one region since the last pass (the minute's count minus what was already counted). */
function demandSince(memory: RebalanceMemory, region: string, targets: SplitTarget[], minute: number, usage: Record<string, string>): number[] {
  return targets.map((t) => {
    const total = demandOf(t, usage);
    const key = `${region}|${t.id}`;
    const before = memory.counted.get(key);
    memory.counted.set(key, { minute, total });
    return before && before.minute === minute ? Math.max(0, total - before.total) : total;
  });
}

export async function rebalanceRegions(db: Db, regions: RegionTarget[], memory: RebalanceMemory, { nowMs }: { nowMs: number }): Promise<RebalanceResult> {
  const latest = await latestPolicyVersion(db);
  const parsed = latest ? parseCompiledPolicy(latest.document) : null;
  const targets = parsed?.ok ? splitTargets(parsed.value) : [];
  if (targets.length === 0) return { shares: null, demand: [], missed: [] };

  const minute = minuteStartMs(nowMs);
  const reads = await Promise.allSettled(
    regions.map(async (r) => ({ usage: await withTimeout(r.redis.hgetall(keys.usageMinute(minute)), r.name), shares: await withTimeout(readRegionShares(r.redis), r.name) })),
  );
  const perRegion = reads.map((read, ri) => (read.status === "fulfilled" ? demandSince(memory, regions[ri]!.name, targets, minute, read.value.usage) : null));
  const demand = targets.map((_, ti) => perRegion.map((d) => (d === null ? null : d[ti]!)));
  const names = regions.map((r) => r.name);
  const held = reads.map((r) => (r.status === "fulfilled" && r.value.shares.status === "ok" ? r.value.shares.shares : null));
  const previous = held.find((s) => s !== null && s.regions.join(",") === names.join(",")) ?? null;
  // Regions that do not all hold the same document (or one that could not be read) may hold larger,
  // older weights somewhere: nothing grows this pass.
  const allSame = held.every((s) => s !== null && JSON.stringify(s.limits) === JSON.stringify(previous?.limits));

  const shares = planShares({
    regions: names,
    previous,
    targets,
    demand,
    lastWriteComplete: memory.lastWriteComplete && allSame,
    nowMs,
    followMs: 2 * REGION_SHARES_POLL_MS,
  });
  const outcome = await writeToRegions(regions, (redis) => writeRegionShares(redis, shares));
  memory.lastWriteComplete = outcome.missed.length === 0;
  return { shares, demand, missed: outcome.missed.map((m) => m.region) };
}
