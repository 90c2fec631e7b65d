/**
 * Reads of the usage rollups (UsageRollup) for the usage API, the dashboards and the alerts.
 *
 * Row kinds written by lib/jobs/rollup.ts (each at minute, hour and day granularity):
 *  - tenant rows: tenant = slug, keyPrefix '' — per operation and outcome;
 *  - key rows: keyPrefix ≠ '' (operation '') — outcome allowed|denied per API key prefix;
 *  - tier totals: tenant `*:<tier>` — all tenants of a tier, per operation and outcome;
 *  - system rows: tenant '' — `latency:<path>` histogram buckets and `error` events.
 * Cross-tenant charts read the tier totals (a few rows per bucket, not one per tenant), and ranges
 * are decomposed into whole days, whole hours and the remaining minutes so every total is exact
 * and cheap (see `decompose`).
 */
import type { Db, Tx } from "./client";

export type Granularity = "minute" | "hour" | "day";
export const GRANULARITY_MS: Record<Granularity, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

export interface Span {
  granularity: Granularity;
  fromMs: number;
  toMs: number;
}

/**
 * Splits [fromMs, toMs) into whole days, whole hours and minutes, coarsest first, so a range sum
 * reads the fewest rows and stays exact. Bounds are floored to the minute.
 */
export function decompose(fromMs: number, toMs: number): Span[] {
  const M = GRANULARITY_MS.minute;
  const H = GRANULARITY_MS.hour;
  const D = GRANULARITY_MS.day;
  const from = Math.floor(fromMs / M) * M;
  const to = Math.floor(toMs / M) * M;
  if (to <= from) return [];
  const spans: Span[] = [];
  const dayFrom = Math.ceil(from / D) * D;
  const dayTo = Math.floor(to / D) * D;
  if (dayTo > dayFrom) {
    spans.push({ granularity: "day", fromMs: dayFrom, toMs: dayTo });
    hours(from, dayFrom);
    hours(dayTo, to);
  } else {
    hours(from, to);
  }
  return spans.filter((s) => s.toMs > s.fromMs);

  function hours(a: number, b: number) {
    if (b <= a) return;
    const hFrom = Math.ceil(a / H) * H;
    const hTo = Math.floor(b / H) * H;
    if (hTo > hFrom) {
      spans.push({ granularity: "hour", fromMs: hFrom, toMs: hTo });
      spans.push({ granularity: "minute", fromMs: a, toMs: hFrom });
      spans.push({ granularity: "minute", fromMs: hTo, toMs: b });
    } else {
      spans.push({ granularity: "minute", fromMs: a, toMs: b });
    }
  }
}

export function pgTs(ms: number): string {
  return new Date(ms).toISOString().replace("T", " ").replace("Z", "");
}

/** SQL for "the row lies in one of these spans", with parameters starting at $<first>. */
export function spansSql(spans: Span[], first: number): { sql: string; params: string[] } {
  const parts: string[] = [];
  const params: string[] = [];
  for (const s of spans) {
    const i = first + params.length;
    parts.push(`("granularity" = $${i} AND "bucketStart" >= $${i + 1}::timestamp(3) AND "bucketStart" < $${i + 2}::timestamp(3))`);
    params.push(s.granularity, pgTs(s.fromMs), pgTs(s.toMs));
  }
  return { sql: parts.length ? `(${parts.join(" OR ")})` : "FALSE", params };
}

/**
 * The tier-total pseudo-tenants (`*:<tier>`) of every tier any published policy or the Tier table
 * ever named, plus `*:_` (unknown keys) and `*:envoy:<domain>` for every `rateLimitService` domain
 * a published policy named (lib/envoy/accounting.ts). Cross-tenant reads select them with
 * `tenant = ANY(…)`, an index range scan per tier, rather than `LIKE '*:%'`, which no plain btree serves.
 */
export async function tierTenants(db: Db): Promise<string[]> {
  const rows = await db.$queryRawUnsafe<{ n: string }[]>(
    `SELECT DISTINCT '*:' || t AS n FROM (
       SELECT jsonb_object_keys(CASE WHEN jsonb_typeof("document"->'tiers') = 'object' THEN "document"->'tiers' ELSE '{}'::jsonb END) AS t FROM "PolicyVersion"
       UNION SELECT 'envoy:' || (jsonb_array_elements(CASE WHEN jsonb_typeof("document"->'rateLimitService'->'domains') = 'array' THEN "document"->'rateLimitService'->'domains' ELSE '[]'::jsonb END)->>'domain') FROM "PolicyVersion"
       UNION SELECT "name" FROM "Tier" UNION SELECT '_') x ORDER BY 1`,
  );
  return rows.map((r) => r.n);
}

export interface SeriesPoint {
  bucketStartMs: number;
  allowed: number;
  denied: number;
  shadowDenied: number;
  degraded: number;
}

export interface SeriesFilter {
  fromMs: number;
  toMs: number;
  granularity: Granularity;
  tenant?: string;
  tier?: string;
}

function bucketRange(f: { fromMs: number; toMs: number; granularity: Granularity }): number[] {
  const size = GRANULARITY_MS[f.granularity];
  const out: number[] = [];
  for (let t = Math.floor(f.fromMs / size) * size; t < f.toMs; t += size) out.push(t);
  return out;
}

async function subjectSql(db: Db, f: { tenant?: string; tier?: string }, first: number): Promise<{ sql: string; params: Array<string | string[]> }> {
  if (f.tenant && f.tier) return { sql: `"tenant" = $${first} AND "keyPrefix" = '' AND "tier" = $${first + 1}`, params: [f.tenant, f.tier] };
  if (f.tenant) return { sql: `"tenant" = $${first} AND "keyPrefix" = ''`, params: [f.tenant] };
  if (f.tier) return { sql: `"tenant" = $${first}`, params: [`*:${f.tier}`] };
  return { sql: `"tenant" = ANY($${first}::text[])`, params: [await tierTenants(db)] };
}

/** Decisions per bucket by outcome; every bucket of the range is present (zeros where none). */
export async function usageSeries(db: Db, f: SeriesFilter): Promise<SeriesPoint[]> {
  const size = GRANULARITY_MS[f.granularity];
  const subject = await subjectSql(db, f, 4);
  const rows = await db.$queryRawUnsafe<{ b: Date; outcome: string; n: bigint }[]>(
    `SELECT "bucketStart" AS b, "outcome", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "granularity" = $1 AND "bucketStart" >= $2::timestamp(3) AND "bucketStart" < $3::timestamp(3) AND ${subject.sql}
      GROUP BY 1, 2`,
    f.granularity,
    pgTs(Math.floor(f.fromMs / size) * size),
    pgTs(f.toMs),
    ...subject.params,
  );
  const points = new Map(bucketRange(f).map((b) => [b, { bucketStartMs: b, allowed: 0, denied: 0, shadowDenied: 0, degraded: 0 }]));
  for (const r of rows) {
    const p = points.get(r.b.getTime());
    if (!p) continue;
    const n = Number(r.n);
    if (r.outcome === "allowed") p.allowed += n;
    else if (r.outcome === "denied") p.denied += n;
    else if (r.outcome === "shadow_denied") p.shadowDenied += n;
    else if (r.outcome === "degraded") p.degraded += n;
  }
  return [...points.values()];
}

/** Requests per bucket per tier (all outcomes). */
export async function requestsByTier(db: Db, f: { fromMs: number; toMs: number; granularity: Granularity }): Promise<{ tiers: string[]; points: Array<{ bucketStartMs: number } & Record<string, number>> }> {
  const size = GRANULARITY_MS[f.granularity];
  const rows = await db.$queryRawUnsafe<{ b: Date; tier: string; n: bigint }[]>(
    `SELECT "bucketStart" AS b, "tier", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "granularity" = $1 AND "bucketStart" >= $2::timestamp(3) AND "bucketStart" < $3::timestamp(3) AND "tenant" = ANY($4::text[])
      GROUP BY 1, 2`,
    f.granularity,
    pgTs(Math.floor(f.fromMs / size) * size),
    pgTs(f.toMs),
    await tierTenants(db),
  );
  const tiers = [...new Set(rows.map((r) => r.tier))].sort();
  const points = new Map(bucketRange(f).map((b) => [b, { bucketStartMs: b, ...Object.fromEntries(tiers.map((t) => [t, 0])) } as { bucketStartMs: number } & Record<string, number>]));
  for (const r of rows) {
    const p = points.get(r.b.getTime());
    if (p) p[r.tier] = (p[r.tier] ?? 0) + Number(r.n);
  }
  return { tiers, points: [...points.values()] };
}

export interface TopTenant {
  tenant: string;
  tier: string;
  requests: number;
  denied: number;
}
export interface TopKey extends TopTenant {
  keyPrefix: string;
}

/**
 * Rows of the given spans as a UNION ALL of one range scan per span (each branch uses the covering
 * partial index of its row kind; one OR-ed predicate let the planner fall back to a full scan).
 */
function spansUnion(spans: Span[], first: number, columns: string, where: string): { sql: string; params: string[] } {
  const parts: string[] = [];
  const params: string[] = [];
  for (const s of spans) {
    const i = first + params.length;
    parts.push(
      `SELECT ${columns} FROM "UsageRollup" WHERE "granularity" = $${i} AND "bucketStart" >= $${i + 1}::timestamp(3) AND "bucketStart" < $${i + 2}::timestamp(3) AND ${where}`,
    );
    params.push(s.granularity, pgTs(s.fromMs), pgTs(s.toMs));
  }
  return { sql: parts.length ? parts.join(" UNION ALL ") : `SELECT ${columns} FROM "UsageRollup" WHERE FALSE`, params };
}

/**
 * Runs reads that scan a time range of every tenant with sequential scans disabled for the
 * transaction. The planner misjudges such ranges (minute rows crowd the recent end of the
 * `bucketStart` histogram, and granularity and time are correlated), estimates a large share of the
 * table and picks a full scan (0.8–2.6 s at 1,000 tenants × 30 days); the primary key's
 * (granularity, bucketStart, …) range scan reads only the rows of the range.
 */
async function withRangeScans<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return db.$transaction(async (tx) => {
    await tx.$executeRawUnsafe("SET LOCAL enable_seqscan = off");
    await tx.$executeRawUnsafe("SET LOCAL jit = off");
    return fn(tx);
  });
}

/** Top tenants and key prefixes over [fromMs, toMs), by requests or denied decisions. Exact. */
export async function topConsumers(db: Db, f: { fromMs: number; toMs: number; by: "requests" | "denied"; limit: number; tenant?: string }): Promise<{ tenants: TopTenant[]; keys: TopKey[] }> {
  const spans = decompose(f.fromMs, f.toMs);
  const order = f.by === "requests" ? `requests DESC, denied DESC` : `denied DESC, requests DESC`;
  // The tenant filter is a literal-free parameter placed after the span parameters.
  const tenantWhere = (n: number) => (f.tenant ? ` AND "tenant" = $${n}` : "");
  const tenantRows = spansUnion(spans, 1, `"tenant", "tier", "outcome", "count"`, `"keyPrefix" = '' AND "tenant" NOT LIKE '*:%' AND "tenant" NOT IN ('', '_')${tenantWhere(spans.length * 3 + 2)}`);
  const keyRows = spansUnion(spans, 1, `"tenant", "keyPrefix", "tier", "outcome", "count"`, `"keyPrefix" <> '' AND "tenant" <> '_'${tenantWhere(spans.length * 3 + 2)}`);
  const extra = f.tenant ? [f.tenant] : [];
  const [tenants, keys] = await Promise.all([
    withRangeScans(db, (tx) => tx.$queryRawUnsafe<{ tenant: string; tier: string; requests: bigint; denied: bigint }[]>(
      `SELECT "tenant", max("tier") AS tier, sum("count")::bigint AS requests,
              coalesce(sum("count") FILTER (WHERE "outcome" = 'denied'), 0)::bigint AS denied
         FROM (${tenantRows.sql}) r
        GROUP BY "tenant" ORDER BY ${order}, "tenant" ASC LIMIT $${spans.length * 3 + 1}`,
      ...tenantRows.params,
      f.limit,
      ...extra,
    )),
    withRangeScans(db, (tx) => tx.$queryRawUnsafe<{ tenant: string; keyPrefix: string; tier: string; requests: bigint; denied: bigint }[]>(
      `SELECT "tenant", "keyPrefix", max("tier") AS tier, sum("count")::bigint AS requests,
              coalesce(sum("count") FILTER (WHERE "outcome" = 'denied'), 0)::bigint AS denied
         FROM (${keyRows.sql}) r
        GROUP BY "tenant", "keyPrefix" ORDER BY ${order}, "tenant" ASC, "keyPrefix" ASC LIMIT $${spans.length * 3 + 1}`,
      ...keyRows.params,
      f.limit,
      ...extra,
    )),
  ]);
  return {
    tenants: tenants.map((r) => ({ tenant: r.tenant, tier: r.tier, requests: Number(r.requests), denied: Number(r.denied) })),
    keys: keys.map((r) => ({ tenant: r.tenant, keyPrefix: r.keyPrefix, tier: r.tier, requests: Number(r.requests), denied: Number(r.denied) })),
  };
}

/** Exact decision totals by outcome for one subject over a range (alerts, projections). */
export async function usageTotals(db: Db, f: { fromMs: number; toMs: number; tenant?: string; tier?: string }): Promise<Record<string, number>> {
  const spans = spansSql(decompose(f.fromMs, f.toMs), 1);
  const subject = await subjectSql(db, f, spans.params.length + 1);
  const rows = await db.$queryRawUnsafe<{ outcome: string; n: bigint }[]>(
    `SELECT "outcome", sum("count")::bigint AS n FROM "UsageRollup" WHERE ${spans.sql} AND ${subject.sql} GROUP BY 1`,
    ...spans.params,
    ...subject.params,
  );
  return Object.fromEntries(rows.map((r) => [r.outcome, Number(r.n)]));
}

/** Per bucket: latency histogram counts per path (`allowed` / `denied`), bucket index → count. */
export async function latencyHistograms(db: Db, f: { fromMs: number; toMs: number; granularity: Granularity }): Promise<Map<number, { allowed: number[]; denied: number[] }>> {
  const size = GRANULARITY_MS[f.granularity];
  const rows = await db.$queryRawUnsafe<{ b: Date; operation: string; outcome: string; n: bigint }[]>(
    `SELECT "bucketStart" AS b, "operation", "outcome", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "granularity" = $1 AND "bucketStart" >= $2::timestamp(3) AND "bucketStart" < $3::timestamp(3)
        AND "tenant" = '' AND "operation" IN ('latency:allowed', 'latency:denied')
      GROUP BY 1, 2, 3`,
    f.granularity,
    pgTs(Math.floor(f.fromMs / size) * size),
    pgTs(f.toMs),
  );
  const out = new Map<number, { allowed: number[]; denied: number[] }>();
  for (const b of bucketRange(f)) out.set(b, { allowed: [], denied: [] });
  for (const r of rows) {
    const h = out.get(r.b.getTime());
    if (!h) continue;
    const path = r.operation === "latency:allowed" ? "allowed" : "denied";
    const i = Number(r.outcome);
    h[path][i] = (h[path][i] ?? 0) + Number(r.n);
  }
  return out;
}

/** Per bucket: store errors (redis_error, redis_timeout, breaker_open) and degraded decisions. */
export async function errorSeries(db: Db, f: { fromMs: number; toMs: number; granularity: Granularity }): Promise<Array<{ bucketStartMs: number; redisError: number; redisTimeout: number; breakerOpen: number; degraded: number }>> {
  const size = GRANULARITY_MS[f.granularity];
  const rows = await db.$queryRawUnsafe<{ b: Date; outcome: string; n: bigint }[]>(
    `SELECT "bucketStart" AS b, "outcome", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "granularity" = $1 AND "bucketStart" >= $2::timestamp(3) AND "bucketStart" < $3::timestamp(3)
        AND "tenant" = ANY($4::text[]) AND ("operation" = 'error' OR "outcome" = 'degraded')
      GROUP BY 1, 2`,
    f.granularity,
    pgTs(Math.floor(f.fromMs / size) * size),
    pgTs(f.toMs),
    ["", ...(await tierTenants(db))],
  );
  const points = new Map(bucketRange(f).map((b) => [b, { bucketStartMs: b, redisError: 0, redisTimeout: 0, breakerOpen: 0, degraded: 0 }]));
  for (const r of rows) {
    const p = points.get(r.b.getTime());
    if (!p) continue;
    const n = Number(r.n);
    if (r.outcome === "redis_error") p.redisError += n;
    else if (r.outcome === "redis_timeout") p.redisTimeout += n;
    else if (r.outcome === "breaker_open") p.breakerOpen += n;
    else if (r.outcome === "degraded") p.degraded += n;
  }
  return [...points.values()];
}

/** Policy versions published in a range (markers on every time axis). */
export async function policyMarkers(db: Db, f: { fromMs: number; toMs: number }): Promise<Array<{ version: number; atMs: number; author: string; note: string | null }>> {
  const rows = await db.policyVersion.findMany({
    where: { createdAt: { gte: new Date(f.fromMs), lt: new Date(f.toMs) } },
    select: { version: true, createdAt: true, author: true, note: true },
    orderBy: { version: "asc" },
  });
  return rows.map((r) => ({ version: r.version, atMs: r.createdAt.getTime(), author: r.author, note: r.note }));
}

/**
 * 429s by the limit that denied them (the rollup's `limit:` system rows), most first: of one
 * tenant, or of every tenant (then `tenant` says whose).
 */
export async function limitDenialTotals(
  db: Db,
  f: { fromMs: number; toMs: number; tenant?: string; limit?: number },
): Promise<Array<{ tenant: string; operation: string; limit: string; denied: number }>> {
  const spans = spansSql(decompose(f.fromMs, f.toMs), 1);
  const like = f.tenant === undefined ? "limit:%" : `limit:${f.tenant.replace(/[\\%_]/g, (c) => `\\${c}`)}|%`;
  const rows = await db.$queryRawUnsafe<{ operation: string; n: bigint }[]>(
    `SELECT "operation", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE ${spans.sql} AND "tenant" = '' AND "outcome" = 'denied' AND "operation" LIKE $${spans.params.length + 1}
      GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ${Math.max(1, Math.min(f.limit ?? 200, 1000))}`,
    ...spans.params,
    like,
  );
  return rows.map((r) => {
    const [tenant = "", operation = "*", limit = ""] = r.operation.slice("limit:".length).split("|");
    return { tenant, operation, limit, denied: Number(r.n) };
  });
}
