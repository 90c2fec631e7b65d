/**
 * The one way services write the published state (policy documents, the key index, service and
 * tenant tokens) to Redis: to every region's Redis (SLUICE_REGIONS, lib/redis/regions.ts), or to
 * the one Redis without regions.
 *
 * Without regions a failed write is store_unavailable (503) and the caller's transaction rolls
 * back, as before. With regions the write succeeds when at least one region took it: each region
 * that did not (down, unreachable, slower than REGION_WRITE_TIMEOUT_MS) is recorded as behind in
 * the same transaction, keeps its last good copy, and the worker writes the latest published state
 * there once it answers again (lib/jobs/region-sync.ts). No region reached: store_unavailable,
 * nothing changed.
 */
import type { Db, Tx } from "../../db/client";
import { markRegionsBehind } from "../../db/region-repo";
import type { RedisClient } from "../../redis/client";
import { regionTargets, writeToRegions, type RegionWriteOutcome } from "../../redis/regions";
import { redisStep, ServiceError } from "../errors";

export type { RegionWriteOutcome } from "../../redis/regions";

export async function writeEveryRegion(
  db: Db | Tx,
  home: RedisClient,
  what: string,
  write: (redis: RedisClient) => Promise<unknown>,
  nowMs: number = Date.now(),
): Promise<RegionWriteOutcome> {
  const targets = regionTargets(home);
  if (targets.length === 1 && targets[0]!.redis === home) {
    await redisStep(what, () => write(home));
    return { reached: [targets[0]!.name], missed: [] };
  }
  const outcome = await writeToRegions(targets, write);
  if (outcome.reached.length === 0) {
    throw new ServiceError("store_unavailable", `no region's Redis is available (${what}); nothing was changed`, {
      cause: new AggregateError(outcome.missed.map((m) => m.error), outcome.missed.map((m) => `${m.region}: ${m.error.message}`).join("; ")),
    });
  }
  if (outcome.missed.length > 0) await markRegionsBehind(db, outcome.missed.map((m) => m.region), what, nowMs);
  return outcome;
}
