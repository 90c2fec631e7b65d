/**
 * Reads of the usage rollups for justifying limits (lib/services/justify/replay.ts, lib/services/justify/advisor.ts):
 * the recorded per-minute, per-key traffic to replay, subjects' peak rates, month-to-date use.
 * Row kinds are those of lib/db/usage-repo.ts (tenant rows: keyPrefix ''; key rows: keyPrefix ≠ '',
 * operation ''; tier totals `*:<tier>`; system rows tenant ''). Requests are decisions of every
 * outcome: a denied request was demand too.
 */
import type { Db } from "./client";
import { pgTs } from "./usage-repo";

const TENANT_ROWS = `"keyPrefix" = '' AND "tenant" NOT LIKE '*:%' AND "tenant" NOT IN ('', '_')`;
const KEY_ROWS = `"keyPrefix" <> '' AND "tenant" NOT LIKE '*:%' AND "tenant" NOT IN ('', '_')`;

/** Requests per recorded minute in [fromMs, toMs), all tenants (the tier totals): to fit a replay budget. */
export async function requestsPerMinute(db: Db, f: { fromMs: number; toMs: number }): Promise<{ minuteMs: number; requests: number }[]> {
  const rows = await db.$queryRawUnsafe<{ b: Date; n: bigint }[]>(
    `SELECT "bucketStart" AS b, sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "granularity" = 'minute' AND "bucketStart" >= $1::timestamp(3) AND "bucketStart" < $2::timestamp(3) AND "tenant" LIKE '*:%'
      GROUP BY 1 ORDER BY 1`,
    pgTs(f.fromMs),
    pgTs(f.toMs),
  );
  return rows.map((r) => ({ minuteMs: r.b.getTime(), requests: Number(r.n) }));
}

/** The minute rows of [fromMs, toMs): per tenant and operation, and per tenant and key. */
export async function recordedMinutes(db: Db, f: { fromMs: number; toMs: number }) {
  const range = `"granularity" = 'minute' AND "bucketStart" >= $1::timestamp(3) AND "bucketStart" < $2::timestamp(3)`;
  const tenantRows = await db.$queryRawUnsafe<{ b: Date; tenant: string; operation: string; n: bigint }[]>(
    `SELECT "bucketStart" AS b, "tenant", "operation", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE ${range} AND ${TENANT_ROWS} GROUP BY 1, 2, 3`,
    pgTs(f.fromMs),
    pgTs(f.toMs),
  );
  const keyRows = await db.$queryRawUnsafe<{ b: Date; tenant: string; keyPrefix: string; n: bigint }[]>(
    `SELECT "bucketStart" AS b, "tenant", "keyPrefix", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE ${range} AND ${KEY_ROWS} GROUP BY 1, 2, 3`,
    pgTs(f.fromMs),
    pgTs(f.toMs),
  );
  const buckets = new Map<number, { bucketStartMs: number; tenantOperations: { tenant: string; operation: string; count: number }[]; keys: { tenant: string; keyPrefix: string; count: number }[] }>();
  const bucket = (b: Date) => {
    const ms = b.getTime();
    let x = buckets.get(ms);
    if (!x) buckets.set(ms, (x = { bucketStartMs: ms, tenantOperations: [], keys: [] }));
    return x;
  };
  for (const r of tenantRows) bucket(r.b).tenantOperations.push({ tenant: r.tenant, operation: r.operation, count: Number(r.n) });
  for (const r of keyRows) bucket(r.b).keys.push({ tenant: r.tenant, keyPrefix: r.keyPrefix, count: Number(r.n) });
  return [...buckets.values()].sort((a, b) => a.bucketStartMs - b.bucketStartMs);
}

/** Admitted requests (allowed, shadow-denied, degraded) per tenant and operation in [fromMs, toMs), from day and finer rows. */
export async function admittedByTenantOperation(db: Db, f: { fromMs: number; toMs: number }): Promise<Map<string, Map<string, number>>> {
  const rows = await db.$queryRawUnsafe<{ tenant: string; operation: string; n: bigint }[]>(
    `SELECT "tenant", "operation", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "granularity" = 'minute' AND "bucketStart" >= $1::timestamp(3) AND "bucketStart" < $2::timestamp(3)
        AND ${TENANT_ROWS} AND "outcome" <> 'denied'
      GROUP BY 1, 2
     UNION ALL
     SELECT "tenant", "operation", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "granularity" = 'day' AND "bucketStart" >= $3::timestamp(3) AND "bucketStart" < $4::timestamp(3)
        AND ${TENANT_ROWS} AND "outcome" <> 'denied'
      GROUP BY 1, 2`,
    // whole days from day rows, the rest of the range from minutes (minute rows live 7 days; the
    // range is a month so far, whose whole days are all there as day rows)
    pgTs(Math.max(f.fromMs, Math.floor(f.toMs / 86_400_000) * 86_400_000)),
    pgTs(f.toMs),
    pgTs(f.fromMs),
    pgTs(Math.floor(f.toMs / 86_400_000) * 86_400_000),
  );
  const out = new Map<string, Map<string, number>>();
  for (const r of rows) {
    const ops = out.get(r.tenant) ?? new Map<string, number>();
    ops.set(r.operation, (ops.get(r.operation) ?? 0) + Number(r.n));
    out.set(r.tenant, ops);
  }
  return out;
}

export type AdvisorScope = "api_key" | "tenant" | "global";

export interface SubjectStats {
  subject: string;
  /** Most requests in one bucket. */
  peak: number;
  requests: number;
  /** Requests past `limitPerBucket` summed over buckets (0 when no limit was given). */
  over: number;
}

/**
 * Per subject of a tier, over the buckets of `granularity` in [fromMs, toMs): its peak, its total
 * and, for a limit per bucket, the requests past it. A subject is a key (`<tenant>/<keyPrefix>`),
 * a tenant, or the whole tier (global). For an operation other than `*`, a key's count is its
 * tenant's count of that operation times the key's share of the tenant's traffic in that bucket
 * (key rows carry no operation).
 */
export async function subjectStats(
  db: Db,
  f: { fromMs: number; toMs: number; tier: string; operation: string; scope: AdvisorScope; granularity: "minute" | "hour"; limitPerBucket: number | null },
): Promise<SubjectStats[]> {
  if (f.toMs <= f.fromMs) return [];
  const params: unknown[] = [f.granularity, pgTs(f.fromMs), pgTs(f.toMs), f.tier, f.limitPerBucket ?? 0];
  const range = `"granularity" = $1 AND "bucketStart" >= $2::timestamp(3) AND "bucketStart" < $3::timestamp(3)`;
  const anyOp = f.operation === "*";
  if (!anyOp) params.push(f.operation);
  const op = anyOp ? "" : ` AND "operation" = $6`;
  let inner: string;
  if (f.scope === "global") {
    inner = `SELECT 'global' AS subject, "bucketStart" AS b, sum("count")::float8 AS n FROM "UsageRollup"
              WHERE ${range} AND "tenant" = '*:' || $4${op} GROUP BY 2`;
  } else if (f.scope === "tenant") {
    inner = `SELECT "tenant" AS subject, "bucketStart" AS b, sum("count")::float8 AS n FROM "UsageRollup"
              WHERE ${range} AND ${TENANT_ROWS} AND "tier" = $4${op} GROUP BY 1, 2`;
  } else if (anyOp) {
    inner = `SELECT "tenant" || '/' || "keyPrefix" AS subject, "bucketStart" AS b, sum("count")::float8 AS n FROM "UsageRollup"
              WHERE ${range} AND ${KEY_ROWS} AND "tier" = $4 GROUP BY 1, 2`;
  } else {
    inner = `WITH k AS (SELECT "tenant", "keyPrefix", "bucketStart", sum("count") AS n FROM "UsageRollup"
                         WHERE ${range} AND ${KEY_ROWS} AND "tier" = $4 GROUP BY 1, 2, 3),
                  t AS (SELECT "tenant", "bucketStart", sum("count") AS total, sum("count") FILTER (WHERE true${op}) AS op FROM "UsageRollup"
                         WHERE ${range} AND ${TENANT_ROWS} AND "tier" = $4 GROUP BY 1, 2)
             SELECT k."tenant" || '/' || k."keyPrefix" AS subject, k."bucketStart" AS b, (k.n * coalesce(t.op, 0) / nullif(t.total, 0))::float8 AS n
               FROM k JOIN t ON t."tenant" = k."tenant" AND t."bucketStart" = k."bucketStart"`;
  }
  // $5 is always referenced (PostgreSQL refuses a parameter it cannot type); without a limit it is ignored.
  const rows = await db.$queryRawUnsafe<{ subject: string; peak: number; requests: number; over: number }[]>(
    `SELECT subject, max(n) AS peak, sum(n) AS requests, sum(greatest(n - $5::float8, 0)) AS over FROM (${inner}) s WHERE n > 0 GROUP BY subject ORDER BY subject`,
    ...params,
  );
  return rows.map((r) => ({ subject: r.subject, peak: Number(r.peak), requests: Number(r.requests), over: f.limitPerBucket === null ? 0 : Number(r.over) }));
}

/** The oldest minute bucket at or after `fromMs` (minute rows are kept ROLLUP_DOWNSAMPLE_AFTER_MS), or null. */
export async function oldestMinuteBucket(db: Db, fromMs: number): Promise<number | null> {
  const rows = await db.$queryRawUnsafe<{ b: Date | null }[]>(
    `SELECT min("bucketStart") AS b FROM "UsageRollup" WHERE "granularity" = 'minute' AND "bucketStart" >= $1::timestamp(3)`,
    pgTs(fromMs),
  );
  return rows[0]?.b ? rows[0].b.getTime() : null;
}

/** Recorded decisions and denials per tier in [fromMs, toMs) (minute rows of the tier totals). */
export async function recordedDenialsByTier(db: Db, f: { fromMs: number; toMs: number }): Promise<{ tier: string; requests: number; denied: number }[]> {
  const rows = await db.$queryRawUnsafe<{ tier: string; n: bigint; d: bigint }[]>(
    `SELECT substr("tenant", 3) AS tier, sum("count")::bigint AS n, coalesce(sum("count") FILTER (WHERE "outcome" = 'denied'), 0)::bigint AS d
       FROM "UsageRollup"
      WHERE "granularity" = 'minute' AND "bucketStart" >= $1::timestamp(3) AND "bucketStart" < $2::timestamp(3) AND "tenant" LIKE '*:%'
      GROUP BY 1 ORDER BY 1`,
    pgTs(f.fromMs),
    pgTs(f.toMs),
  );
  return rows.map((r) => ({ tier: r.tier, requests: Number(r.n), denied: Number(r.d) }));
}
