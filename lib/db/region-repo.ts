/**
 * Regions that missed a write of the published state (docs/regions.md): one RegionBehind row per
 * region, its `since` the time of the latest miss. Written by the services that write Redis
 * (lib/services/policy/region-writes.ts), in their own transaction; read and cleared by the worker's catch-up
 * (lib/jobs/region-sync.ts), which deletes a row only if no newer miss came in meanwhile.
 */
import type { Db, Tx } from "./client";

export interface RegionBehindRow {
  region: string;
  since: Date;
  reason: string;
}

/** Records that each of `regions` missed a write (`reason` says which), at `nowMs`. */
export async function markRegionsBehind(db: Db | Tx, regions: string[], reason: string, nowMs: number): Promise<void> {
  const since = new Date(nowMs);
  // Sequential on purpose: inside an interactive transaction all queries share one connection.
  for (const region of regions) {
    await db.regionBehind.upsert({ where: { region }, create: { region, since, reason }, update: { since, reason } });
  }
}

export async function listRegionsBehind(db: Db | Tx): Promise<RegionBehindRow[]> {
  return db.regionBehind.findMany({ orderBy: { region: "asc" } });
}

/** Clears a region's row unless it missed another write after `seenSince` (that one is caught up next time). */
export async function clearRegionBehind(db: Db | Tx, region: string, seenSince: Date): Promise<void> {
  await db.regionBehind.deleteMany({ where: { region, since: { lte: seenSince } } });
}
