/**
 * Catching up a region that missed a write (docs/regions.md): with SLUICE_REGIONS, the worker
 * compares every region's Redis with Postgres, the source of truth, every RESTORE_CHECK_MS, and
 * writes the latest published state (the live document, the key index, the service and tenant
 * tokens, one MULTI that also PUBLISHes the version, so the region's decision servers re-read at
 * once) to each region that is behind. A region is behind when
 * - its live version is not Postgres's latest (it missed a publish or a rollback, or holds a
 *   version a rolled-back transaction left there),
 * - it lost part of the published state (readPublishedState: a restart without persistence), or
 * - a RegionBehind row says it missed a key or token change (lib/services/policy/region-writes.ts).
 * A region that does not answer is skipped and tried again on the next pass; until then its
 * decision servers keep their last good copy.
 *
 * The rewrite holds the policy lock (the one publish holds), so it never interleaves with a
 * publish; the RegionBehind row is cleared only if no newer miss was recorded meanwhile.
 * What this does not restore in a region: its counters (rate-limit windows start empty after a
 * loss; quota counters are raised from Postgres only in the home Redis, lib/jobs/restore-published.ts).
 */
import type { Db } from "../db/client";
import { latestPolicyVersion, listKeyIndexEntries, listServiceTokenHashes, listTenantTokenHashes, lockPolicy } from "../db/policy-repo";
import { clearRegionBehind, listRegionsBehind } from "../db/region-repo";
import { parseCompiledPolicy } from "../policy/compiled-schema";
import { missingParts, readPublishedState, writePublishedPolicy } from "../redis/policy";
import type { RegionShares } from "../policy/region-shares";
import { readRegionShares, seedRegionShares } from "../redis/region-shares";
import { withTimeout, type RegionTarget } from "../redis/regions";

export interface RegionSyncResult {
  region: string;
  /** `current`: nothing to do; `caught-up`: the latest state was written; `unreachable`: retried next pass. */
  status: "current" | "caught-up" | "unreachable";
  /** The region's live version before this pass (null: none, or unreachable). */
  versionBefore: number | null;
  /** Postgres's latest version. */
  latestVersion: number;
  /** Why it was behind (empty when current). */
  why: string[];
  error?: string;
}


/** One pass over every region; never throws for a region that is down (it says so in its result). */
export async function syncRegions(db: Db, targets: RegionTarget[]): Promise<RegionSyncResult[]> {
  const latest = await latestPolicyVersion(db);
  if (!latest) return []; // nothing published yet: nothing any region could be behind on
  const behindRows = new Map((await listRegionsBehind(db)).map((r) => [r.region, r]));
  // Probed at once: a region that is down costs the pass one timeout, not one per region.
  const probes = await Promise.allSettled(targets.map((t) => withTimeout(readPublishedState(t.redis), t.name)));
  const results: RegionSyncResult[] = [];
  for (const [i, target] of targets.entries()) {
    const base = { region: target.name, latestVersion: latest.version };
    const probe = probes[i]!;
    if (probe.status === "rejected") {
      results.push({ ...base, status: "unreachable", versionBefore: null, why: [], error: probe.reason instanceof Error ? probe.reason.message : String(probe.reason) });
      continue;
    }
    const state = probe.value;
    const why: string[] = [];
    if (state.currentVersion !== latest.version) why.push(`version ${state.currentVersion ?? "none"}, latest ${latest.version}`);
    for (const part of missingParts(state)) if (part !== "policy") why.push(`${part} missing`);
    const row = behindRows.get(target.name);
    if (row) why.push(`missed: ${row.reason}`);
    if (why.length === 0) {
      results.push({ ...base, status: "current", versionBefore: state.currentVersion, why });
      continue;
    }
    try {
      await catchUp(db, target, targets.map((t) => t.name), await sharesOfAnother(targets, target), row?.since ?? null);
      results.push({ ...base, status: "caught-up", versionBefore: state.currentVersion, why });
    } catch (error) {
      results.push({ ...base, status: "unreachable", versionBefore: state.currentVersion, why, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return results;
}

/** The shares document of a region other than `except` (they are identical; a lagging region copies it rather than start equal). */
async function sharesOfAnother(targets: RegionTarget[], except: RegionTarget): Promise<RegionShares | undefined> {
  for (const t of targets) {
    if (t === except) continue;
    const read = await withTimeout(readRegionShares(t.redis), t.name).catch(() => null);
    if (read?.status === "ok") return read.shares;
  }
  return undefined;
}

/** Writes Postgres's latest published state to one region, under the policy lock. */
async function catchUp(db: Db, target: RegionTarget, regionNames: string[], sharesFrom: RegionShares | undefined, seenSince: Date | null): Promise<void> {
  await db.$transaction(
    async (tx) => {
      await lockPolicy(tx);
      const latest = await latestPolicyVersion(tx);
      if (!latest) return;
      const stored = parseCompiledPolicy(latest.document);
      if (!stored.ok) throw new Error(`stored policy v${latest.version} does not validate; cannot write it to region ${target.name}`);
      const extras = {
        keyIndex: await listKeyIndexEntries(tx),
        serviceTokens: await listServiceTokenHashes(tx),
        tenantTokens: await listTenantTokenHashes(tx),
      };
      await withTimeout(writePublishedPolicy(target.redis, stored.value, extras), target.name);
      await withTimeout(seedRegionShares(target.redis, regionNames, Date.now(), sharesFrom), target.name);
      if (seenSince) await clearRegionBehind(tx, target.name, seenSince);
    },
    { maxWait: 10_000, timeout: 60_000 },
  );
}
