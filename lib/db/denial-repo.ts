/**
 * Denials by the decision API's reason, from the rollups' system rows that lib/jobs/rollup.ts
 * writes from the usage hashes' `n|` fields: tenant '', operation `reason:<tenant>|<reason>`
 * (`<tenant>` `_` when no tenant was resolved), tier the decision's tier, outcome `denied`. System
 * rows, so no tenant, key or tier-total series counts them twice.
 */
import { DENIAL_REASONS, emptyDenials, isDenialReason, UNRECORDED_REASON, type DenialsByReason } from "../policy/denial-reasons";
import type { Db } from "./client";
import { decompose, GRANULARITY_MS, pgTs, spansSql, type Granularity } from "./usage-repo";

/** Operation prefix of the reason rows. */
export const DENIAL_REASON_PREFIX = "reason:";

export interface ReasonFilter {
  fromMs: number;
  toMs: number;
  granularity: Granularity;
  tenant?: string;
  tier?: string;
}

/**
 * Denials per bucket and reason, every bucket and every reason present. `deniedOf(bucket)` is the
 * bucket's denied decisions as the outcome rows count them: what the reason rows do not cover
 * (minutes recorded before reasons were) is `not_recorded`.
 */
export async function denialsByReason(db: Db, f: ReasonFilter, deniedOf: (bucketStartMs: number) => number): Promise<Map<number, DenialsByReason>> {
  const size = GRANULARITY_MS[f.granularity];
  const params: string[] = [f.granularity, pgTs(Math.floor(f.fromMs / size) * size), pgTs(f.toMs), f.tenant ? `${DENIAL_REASON_PREFIX}${f.tenant}|` : DENIAL_REASON_PREFIX];
  let tierSql = "";
  if (f.tier) {
    params.push(f.tier);
    tierSql = ` AND "tier" = $${params.length}`;
  }
  const rows = await db.$queryRawUnsafe<{ b: Date; reason: string; n: bigint }[]>(
    `SELECT "bucketStart" AS b, split_part("operation", '|', 2) AS reason, sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "tenant" = '' AND "granularity" = $1 AND "bucketStart" >= $2::timestamp(3) AND "bucketStart" < $3::timestamp(3)
        AND starts_with("operation", $4)${tierSql}
      GROUP BY 1, 2`,
    ...params,
  );
  const out = new Map<number, DenialsByReason>();
  for (let t = Math.floor(f.fromMs / size) * size; t < f.toMs; t += size) out.set(t, emptyDenials());
  for (const r of rows) {
    const d = out.get(r.b.getTime());
    if (d && isDenialReason(r.reason)) d[r.reason] += Number(r.n);
  }
  for (const [t, d] of out) {
    const recorded = DENIAL_REASONS.reduce((s, r) => s + d[r], 0);
    d[UNRECORDED_REASON] = Math.max(0, deniedOf(t) - recorded);
  }
  return out;
}

/** Adds up per-bucket denials. */
export function sumDenials(all: Iterable<DenialsByReason>): DenialsByReason {
  const total = emptyDenials();
  for (const d of all) for (const k of Object.keys(total) as (keyof DenialsByReason)[]) total[k] += d[k];
  return total;
}

/** Denials by reason over [fromMs, toMs) (whole days, hours and minutes, exact); `denied` is the range's denied decisions. */
export async function denialTotals(db: Db, f: { fromMs: number; toMs: number; tenant?: string; denied: number }): Promise<DenialsByReason> {
  const spans = spansSql(decompose(f.fromMs, f.toMs), 2);
  const rows = await db.$queryRawUnsafe<{ reason: string; n: bigint }[]>(
    `SELECT split_part("operation", '|', 2) AS reason, sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "tenant" = '' AND starts_with("operation", $1) AND ${spans.sql}
      GROUP BY 1`,
    f.tenant ? `${DENIAL_REASON_PREFIX}${f.tenant}|` : DENIAL_REASON_PREFIX,
    ...spans.params,
  );
  const out = emptyDenials();
  for (const r of rows) if (isDenialReason(r.reason)) out[r.reason] += Number(r.n);
  out[UNRECORDED_REASON] = Math.max(0, f.denied - DENIAL_REASONS.reduce((s, r) => s + out[r], 0));
  return out;
}
