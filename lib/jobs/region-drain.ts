/**
 * Usage from every region (docs/regions.md#usage-from-every-region): each region's decision servers
 * write their usage hashes to their own Redis, so the worker drains every region's Redis of
 * SLUICE_REGIONS into PostgreSQL, one after the other, with the same exactly-once rollup as one
 * Redis (lib/jobs/rollup.ts): a slice is claimed in the Redis that holds it and committed with a
 * cursor named by its claim token (a random UUID, so two regions' slices of the same minute never
 * share one), so each region's usage counts once.
 *
 * A region that does not answer (down, cut off, slower than PROBE_TIMEOUT_MS) is skipped this pass
 * and drained on a later one: its usage stays in its Redis (a claimed slice too, claimed again with
 * its own token), so nothing is lost and nothing counts twice. Its minutes arrive late on the
 * dashboards meanwhile, and a minute of a billing month closed meanwhile becomes an adjustment of
 * that month, as any late usage does.
 *
 * Without SLUICE_REGIONS the one source is the worker's own Redis (REDIS_URL), as before. With
 * regions the worker's own Redis is drained too (usually it is one of them: draining it twice finds
 * nothing the second time).
 */
import type { Db } from "../db/client";
import type { RedisClient } from "../redis/client";
import { configuredRegions, regionTargets, withTimeout } from "../redis/regions";
import { drainClosedMinutes, type DrainReport } from "./rollup";

/** A region whose Redis does not answer a PING within this is skipped this pass (it would hold every other job of the tick). */
export const PROBE_TIMEOUT_MS = 1_000;

/** The name the worker's own Redis (REDIS_URL) is reported under beside the regions (no region can be named so). */
export const OWN_REDIS = "REDIS_URL";

export type RegionDrain = ({ status: "drained" } & DrainReport) | { status: "unreachable" | "failed"; error: string };

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Drains every region's closed minutes, region by region; stops early when another worker holds the rollup lock. */
export async function drainEveryRegion(db: Db, home: RedisClient, { nowMs, prefix }: { nowMs: number; prefix?: string }): Promise<Map<string, RegionDrain>> {
  const targets = configuredRegions().length === 0 ? regionTargets(home) : [...regionTargets(home), { name: OWN_REDIS, redis: home }];
  const out = new Map<string, RegionDrain>();
  for (const target of targets) {
    try {
      await withTimeout(target.redis.ping(), target.name, PROBE_TIMEOUT_MS);
    } catch (error) {
      out.set(target.name, { status: "unreachable", error: message(error) });
      continue;
    }
    try {
      const report = await drainClosedMinutes({ db, redis: target.redis, prefix }, { nowMs });
      out.set(target.name, { status: "drained", ...report });
      if (report.locked) break;
    } catch (error) {
      // Redis went away mid-drain, or PostgreSQL failed: what was claimed stays claimed and is committed next pass.
      out.set(target.name, { status: "failed", error: message(error) });
    }
  }
  return out;
}
