/**
 * The live accuracy meter read back (docs/proving.md): per tier and limit,
 * the sampled decisions and what the limit and an exact sliding-window log admitted of them, from
 * the usage rollups' system rows (`tenant` '', operation `accuracy:<limit>`, outcome
 * sampled|limit|exact; lib/jobs/rollup.ts), beside the tolerance the live policy holds the limit to.
 * The dashboards show it; the divergence alert (lib/jobs/alerts.ts) fires on it.
 */
import type { Db } from "../../db/client";
import { pgTs } from "../../db/usage-repo";
import { latestPolicyVersion } from "../../db/policy-repo";
import { parseCompiledPolicy } from "../../policy/compiled-schema";
import { accuracyTolerances } from "../../policy/requirements";

export interface AccuracyRow {
  tier: string;
  limit: string;
  sampled: number;
  limitAdmitted: number;
  exactAdmitted: number;
  /** |limit − exact| / exact; null before the log admitted anything. */
  divergence: number | null;
  /** The live policy's tolerance for it; null when it is not held to an exact log (a fixed window whose edge bursts are allowed). */
  tolerance: number | null;
}

/** Sums over [fromMs, toMs) at `granularity` (minute rows for the last days, hour rows otherwise). */
export async function accuracyByLimit(db: Db, f: { fromMs: number; toMs: number; granularity: "minute" | "hour" }): Promise<AccuracyRow[]> {
  const rows = await db.$queryRawUnsafe<{ tier: string; operation: string; outcome: string; n: bigint }[]>(
    `SELECT "tier", "operation", "outcome", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "granularity" = $1 AND "bucketStart" >= $2::timestamp(3) AND "bucketStart" < $3::timestamp(3)
        AND "tenant" = '' AND "operation" LIKE 'accuracy:%'
      GROUP BY 1, 2, 3`,
    f.granularity,
    pgTs(f.fromMs),
    pgTs(f.toMs),
  );
  const live = await latestPolicyVersion(db);
  const parsed = live ? parseCompiledPolicy(live.document) : null;
  const tolerance = new Map((parsed?.ok ? accuracyTolerances(parsed.value) : []).map((t) => [`${t.tier}|${t.limit}`, t.tolerance]));
  const byLimit = new Map<string, AccuracyRow>();
  for (const r of rows) {
    const limit = r.operation.slice("accuracy:".length);
    const id = `${r.tier}|${limit}`;
    const row = byLimit.get(id) ?? { tier: r.tier, limit, sampled: 0, limitAdmitted: 0, exactAdmitted: 0, divergence: null, tolerance: tolerance.get(id) ?? null };
    const n = Number(r.n);
    if (r.outcome === "sampled") row.sampled += n;
    else if (r.outcome === "limit") row.limitAdmitted += n;
    else if (r.outcome === "exact") row.exactAdmitted += n;
    byLimit.set(id, row);
  }
  for (const row of byLimit.values()) row.divergence = row.exactAdmitted > 0 ? Math.abs(row.limitAdmitted - row.exactAdmitted) / row.exactAdmitted : null;
  return [...byLimit.values()].sort((a, b) => a.tier.localeCompare(b.tier) || a.limit.localeCompare(b.limit));
}
