/**
 * The minute rows a rollout is judged and charted on (docs/control-plane.md#guarded-rollout):
 * decisions per tenant and operation from the tenant rows, and among them the 429s, as the
 * dashboards' "429 share" counts them (lib/policy/denial-reasons.ts REASONS_429: rate limited,
 * quota exhausted, concurrency limited, cost above the limit). A 401 (unknown key), 403 (tenant
 * suspended) or 503 (store unavailable) is a denial but no 429.
 *
 * The 429s come from the system rows that count them by the check that denied them (operation
 * `limit:<tenant>|<operation>|<limit>`, lib/jobs/rollup.ts): the decision servers write one for
 * every 429 and for nothing else (lib/redis/usage-format.ts `r|`), and unlike the rows by reason
 * (`reason:<tenant>|<reason>`, per tenant only) they carry the operation, which the guardrail
 * needs to compare the cohort with the control on the same operations.
 */
import type { Db } from "./client";
import { pgTs } from "./usage-repo";

/** Operation prefix of the 429-by-limit system rows (lib/jobs/rollup.ts LIMIT_DENIAL_PREFIX). */
const LIMIT_ROWS = "limit:";

/** One tenant's (or group's) decisions on one operation in a minute: every denial, and the 429s among them. */
export interface CohortUsageRow {
  operation: string;
  total: number;
  /** Every denied decision (401, 403, 429, 503). */
  denied: number;
  /** The 429s among them (never more than `denied`). */
  denied429: number;
}

/**
 * Decisions and denials per (minute, tenant, operation) of the tenant rows, with the 429s of the
 * limit rows joined on: `$1`/`$2` the range's minute bounds. The caller groups the result.
 */
const ROWS_SQL = `
  d AS (
    SELECT "bucketStart" AS b, "tenant", "operation", sum("count") AS total, coalesce(sum("count") FILTER (WHERE "outcome" = 'denied'), 0) AS denied
      FROM "UsageRollup"
     WHERE "granularity" = 'minute' AND "bucketStart" >= $1::timestamp(3) AND "bucketStart" < $2::timestamp(3)
       AND "keyPrefix" = '' AND "tenant" NOT IN ('', '_') AND "tenant" NOT LIKE '*:%'
     GROUP BY 1, 2, 3),
  l AS (
    SELECT "bucketStart" AS b, split_part(substr("operation", ${LIMIT_ROWS.length + 1}), '|', 1) AS "tenant", split_part(substr("operation", ${LIMIT_ROWS.length + 1}), '|', 2) AS "operation", sum("count") AS denied429
      FROM "UsageRollup"
     WHERE "granularity" = 'minute' AND "bucketStart" >= $1::timestamp(3) AND "bucketStart" < $2::timestamp(3)
       AND "tenant" = '' AND starts_with("operation", '${LIMIT_ROWS}')
     GROUP BY 1, 2, 3),
  j AS (
    SELECT d.b, d."tenant", d."operation", d.total, d.denied, least(coalesce(l.denied429, 0), d.denied) AS denied429
      FROM d LEFT JOIN l ON l.b = d.b AND l."tenant" = d."tenant" AND l."operation" = d."operation")`;

/** Each tenant's rows of one minute (the guard's check). */
export async function minuteUsageByTenant(db: Db, minuteMs: number): Promise<(CohortUsageRow & { tenant: string })[]> {
  const rows = await db.$queryRawUnsafe<{ tenant: string; operation: string; total: bigint; denied: bigint; denied429: bigint }[]>(
    `WITH ${ROWS_SQL}
     SELECT "tenant", "operation", total::bigint AS total, denied::bigint AS denied, denied429::bigint AS denied429 FROM j`,
    pgTs(minuteMs),
    pgTs(minuteMs + 60_000),
  );
  return rows.map((r) => ({ tenant: r.tenant, operation: r.operation, total: Number(r.total), denied: Number(r.denied), denied429: Number(r.denied429) }));
}

/** Each tenant's decisions and 429s over [fromMs, toMs), every operation together (a tenant's own share before a rollout). */
export async function usageByTenant(db: Db, fromMs: number, toMs: number): Promise<Map<string, { total: number; denied429: number }>> {
  const rows = await db.$queryRawUnsafe<{ tenant: string; total: bigint; denied429: bigint }[]>(
    `WITH ${ROWS_SQL}
     SELECT "tenant", sum(total)::bigint AS total, sum(denied429)::bigint AS denied429 FROM j GROUP BY 1`,
    pgTs(fromMs),
    pgTs(toMs),
  );
  return new Map(rows.map((r) => [r.tenant, { total: Number(r.total), denied429: Number(r.denied429) }]));
}

/**
 * Per minute of [fromMs, toMs), operation and group: `groupOf` puts each tenant in a group by
 * number (a rollout's charts: the first step whose cohort holds the tenant); tenants it leaves out
 * are group -1. Minutes with no decisions are absent.
 */
export async function minuteUsageByGroup(db: Db, f: { fromMs: number; toMs: number; groupOf: ReadonlyMap<string, number> }): Promise<(CohortUsageRow & { minuteMs: number; group: number })[]> {
  const rows = await db.$queryRawUnsafe<{ b: Date; grp: number; operation: string; total: bigint; denied: bigint; denied429: bigint }[]>(
    `WITH ${ROWS_SQL},
     g AS (SELECT * FROM unnest($3::text[], $4::int[]) AS g("tenant", grp))
     SELECT j.b, coalesce(g.grp, -1)::int AS grp, j."operation", sum(j.total)::bigint AS total, sum(j.denied)::bigint AS denied, sum(j.denied429)::bigint AS denied429
       FROM j LEFT JOIN g ON g."tenant" = j."tenant"
      GROUP BY 1, 2, 3`,
    pgTs(f.fromMs),
    pgTs(f.toMs),
    [...f.groupOf.keys()],
    [...f.groupOf.values()],
  );
  return rows.map((r) => ({ minuteMs: r.b.getTime(), group: r.grp, operation: r.operation, total: Number(r.total), denied: Number(r.denied), denied429: Number(r.denied429) }));
}
