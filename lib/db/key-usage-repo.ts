/**
 * One API key's usage, from the rollups (lib/jobs/rollup.ts): its key rows (tenant = slug,
 * operation '', keyPrefix = the first 12 hex characters of sha256(key), outcome allowed|denied) and
 * its denials by the decision API's reason, system rows (tenant '', operation
 * `keyreason:<tenant>|<keyPrefix>|<reason>`, outcome denied) written from the usage hashes' `kn|`
 * fields. Minutes recorded before those fields existed have denials whose reason is "not recorded".
 */
import { DENIAL_REASONS, emptyDenials, isDenialReason, UNRECORDED_REASON, type DenialsByReason } from "../policy/denial-reasons";
import type { Db } from "./client";
import { decompose, spansSql, type Granularity } from "./usage-repo";

/** Operation prefix of the per-key reason rows. */
export const KEY_REASON_PREFIX = "keyreason:";

export interface KeyUsage {
  allowed: number;
  denied: number;
  /** The denied decisions by reason; `not_recorded` is what the reason rows do not cover. */
  deniedByReason: DenialsByReason;
}

/** Decisions and denials by reason of one key over [fromMs, toMs) (whole days, hours and minutes, exact). */
export async function keyUsage(db: Db, f: { tenant: string; keyPrefix: string; fromMs: number; toMs: number }): Promise<KeyUsage> {
  const spans = decompose(f.fromMs, f.toMs);
  const keySpans = spansSql(spans, 3);
  const reasonSpans = spansSql(spans, 2);
  const [outcomes, reasons] = await Promise.all([
    db.$queryRawUnsafe<{ outcome: string; n: bigint }[]>(
      `SELECT "outcome", sum("count")::bigint AS n FROM "UsageRollup"
        WHERE "tenant" = $1 AND "keyPrefix" = $2 AND ${keySpans.sql}
        GROUP BY 1`,
      f.tenant,
      f.keyPrefix,
      ...keySpans.params,
    ),
    db.$queryRawUnsafe<{ reason: string; n: bigint }[]>(
      `SELECT split_part("operation", '|', 3) AS reason, sum("count")::bigint AS n FROM "UsageRollup"
        WHERE "tenant" = '' AND starts_with("operation", $1) AND ${reasonSpans.sql}
        GROUP BY 1`,
      `${KEY_REASON_PREFIX}${f.tenant}|${f.keyPrefix}|`,
      ...reasonSpans.params,
    ),
  ]);
  const allowed = Number(outcomes.find((r) => r.outcome === "allowed")?.n ?? 0n);
  const denied = Number(outcomes.find((r) => r.outcome === "denied")?.n ?? 0n);
  const deniedByReason = emptyDenials();
  for (const r of reasons) if (isDenialReason(r.reason)) deniedByReason[r.reason] += Number(r.n);
  deniedByReason[UNRECORDED_REASON] = Math.max(0, denied - DENIAL_REASONS.reduce((s, r) => s + deniedByReason[r], 0));
  return { allowed, denied, deniedByReason };
}

/**
 * The start of the last bucket with a decision of this key: its minute while minute rows are kept
 * (the rollup writes a minute's hour and day rows with it, so the minute is the most exact), else
 * its hour or day (older minutes are downsampled away). Null: no decision recorded.
 */
export async function keyLastUsed(db: Db, f: { tenant: string; keyPrefix: string }): Promise<{ atMs: number; granularity: Granularity } | null> {
  const rows = await db.$queryRawUnsafe<{ granularity: Granularity; b: Date }[]>(
    `SELECT "granularity", max("bucketStart") AS b FROM "UsageRollup"
      WHERE "tenant" = $1 AND "keyPrefix" = $2 GROUP BY 1`,
    f.tenant,
    f.keyPrefix,
  );
  for (const granularity of ["minute", "hour", "day"] as const) {
    const row = rows.find((r) => r.granularity === granularity);
    if (row) return { atMs: row.b.getTime(), granularity };
  }
  return null;
}
