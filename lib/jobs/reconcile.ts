/**
 * Reconciliation of quota usage: Postgres (QuotaUsage, from the rollups) against the Redis quota
 * counters the decision servers enforce (`keys.quota(tenant, quotaId)` + `:<period>`, see
 * lib/store/lua/). Both count units (a decision's cost), so with nothing in flight they are equal.
 *
 * Usage is in flight in two places: minutes in Redis not yet drained (read as `pending`) and the
 * last second a decision server aggregates in process before it flushes. So the counters are read
 * between two readings of Postgres + pending, SETTLE_MS apart (longer than the flush interval):
 * everything the counters hold was decided before the counters were read, and is in the second
 * reading; everything in the first reading reached the counters, except decisions that passed
 * degraded (without Redis). A difference outside [first − degraded, second] is real
 * (docs/observability-and-billing.md, "Reconciliation").
 *
 * With several regions (docs/regions.md) PostgreSQL counts every region's usage (the worker drains
 * them all), and each region's counter its own region's: the counters and the pending usage are
 * then summed over every region's Redis.
 */
import type { Db } from "../db/client";
import { pgTs } from "../db/usage-repo";
import { keys, redisPrefix } from "../redis/keys";
import type { RedisLike } from "../redis/usage";
import { parseUsageHash } from "../redis/usage-format";
import { PERIODS } from "../policy/types";
import { countsOnUtcCalendar, effectiveQuotas, PolicyHistory, quotaPeriodKey, tenantPeriodLabel } from "../db/quota-defs";
import { quotaDeltas } from "./rollup";

/** Longer than a decision server's flush interval (1 s), with room for a busy machine. */
export const SETTLE_MS = 2_500;

export interface QuotaDifference {
  tenant: string;
  quotaId: string;
  period: string;
  /** QuotaUsage.used at the first reading. */
  postgres: number;
  /** Units in undrained minutes at the first reading. */
  pending: number;
  redis: number;
  /** redis − (postgres + pending); 0 when they agree. */
  difference: number;
  /** Postgres + pending at the second reading, SETTLE_MS after the counters were read. */
  later: number;
  /** Decisions of the tenant that passed degraded this period (they never reached the counter). */
  degraded: number;
  /** Outside what in-flight usage and degraded decisions explain. */
  real: boolean;
}

type Reading = Map<string, { tenant: string; quotaId: string; period: string; postgres: number; pending: number }>;

async function readExpected(db: Db, sources: readonly RedisLike[], prefix: string, labels: ReadonlySet<string>): Promise<{ reading: Reading; degradedPending: Map<string, number> }> {
  const reading: Reading = new Map();
  const rows = await db.quotaUsage.findMany({ where: { period: { in: [...labels] } }, orderBy: [{ tenant: "asc" }, { quotaId: "asc" }] });
  for (const r of rows) reading.set(`${r.tenant}|${r.quotaId}|${r.period}`, { tenant: r.tenant, quotaId: r.quotaId, period: r.period, postgres: Number(r.used), pending: 0 });
  const degradedPending = new Map<string, number>();
  const policies = new PolicyHistory(db);
  for (const redis of sources) for (const m of (await redis.smembers(keys.usageMinutes(prefix))).map(Number).filter(Number.isSafeInteger)) {
    for (const k of [keys.usageMinute(m, prefix), keys.usageClaimed(m, prefix)]) {
      const usage = parseUsageHash(m, await redis.hgetall(k));
      for (const d of usage.decisions) if (d.outcome === "degraded") degradedPending.set(d.tenant, (degradedPending.get(d.tenant) ?? 0) + d.count);
      for (const d of await quotaDeltas(usage, policies)) {
        if (!labels.has(d.period)) continue;
        const id = `${d.tenant}|${d.quotaId}|${d.period}`;
        const e = reading.get(id) ?? { tenant: d.tenant, quotaId: d.quotaId, period: d.period, postgres: 0, pending: 0 };
        e.pending += Number(d.used);
        reading.set(id, e);
      }
    }
  }
  return { reading, degradedPending };
}

export async function reconcileQuotas(
  db: Db,
  /** The Redis the counters are in: the worker's own, or every region's (summed). */
  redis: RedisLike | readonly RedisLike[],
  { nowMs, prefix = redisPrefix(), settleMs = SETTLE_MS }: { nowMs: number; prefix?: string; settleMs?: number },
): Promise<QuotaDifference[]> {
  const sources = Array.isArray(redis) ? (redis as readonly RedisLike[]) : [redis as RedisLike];
  const month = quotaPeriodKey("month", nowMs);
  const day = quotaPeriodKey("day", nowMs);
  const live = (await new PolicyHistory(db).at(nowMs))?.doc;
  // The labels counted now: the UTC day and month, and each anchored tenant's own periods (the
  // rollup writes its usage under those too, and its counters carry them).
  const labels = new Set([month, day]);
  for (const slug of Object.keys(live?.tenants ?? {})) for (const p of PERIODS) labels.add(tenantPeriodLabel(live, slug, p, nowMs));
  const first = await readExpected(db, sources, prefix, labels);
  // Every quota of every tenant of the live policy too: a counter whose usage is not drained (or
  // not even flushed) yet has no row to find it by.
  for (const slug of Object.keys(live?.tenants ?? {})) {
    for (const q of effectiveQuotas(live!, slug, null, nowMs)) {
      const period = tenantPeriodLabel(live, slug, q.period, nowMs);
      const id = `${slug}|${q.id}|${period}`;
      if (!first.reading.has(id)) first.reading.set(id, { tenant: slug, quotaId: q.id, period, postgres: 0, pending: 0 });
    }
  }
  // An anchored tenant's UTC rows describe no counter of it (the statement's, not the store's).
  for (const [id, e] of first.reading) {
    if ((e.period === month || e.period === day) && !countsOnUtcCalendar(live, e.tenant, e.period === day ? "day" : "month", nowMs)) first.reading.delete(id);
  }
  const counters = new Map<string, number>();
  for (const [id, e] of first.reading) {
    let sum = 0;
    for (const r of sources) sum += Number((await r.get(`${keys.quota(e.tenant, e.quotaId, prefix)}:${e.period}`)) ?? 0);
    counters.set(id, sum);
  }
  if (settleMs > 0) await new Promise((r) => setTimeout(r, settleMs));
  const second = await readExpected(db, sources, prefix, labels);
  // Degraded decisions this month, drained or pending: an upper bound of what never reached Redis.
  const drainedDegraded = await db.$queryRawUnsafe<{ tenant: string; n: bigint }[]>(
    `SELECT "tenant", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "granularity" = 'day' AND "bucketStart" >= $1::timestamp(3) AND "outcome" = 'degraded'
        AND "keyPrefix" = '' AND "tenant" NOT IN ('', '_') AND "tenant" NOT LIKE '*:%'
      GROUP BY 1`,
    pgTs(Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)) - 1, 1)),
  );
  const degradedOf = (tenant: string) =>
    Number(drainedDegraded.find((r) => r.tenant === tenant)?.n ?? 0n) + Math.max(first.degradedPending.get(tenant) ?? 0, second.degradedPending.get(tenant) ?? 0);
  const out: QuotaDifference[] = [];
  for (const [id, e] of first.reading) {
    const redisUsed = counters.get(id) ?? 0;
    const expected = e.postgres + e.pending;
    const s = second.reading.get(id);
    const later = s ? s.postgres + s.pending : expected;
    const degraded = degradedOf(e.tenant);
    const real = redisUsed < expected - degraded || redisUsed > later;
    if (redisUsed === 0 && expected === 0 && later === 0) continue;
    out.push({ tenant: e.tenant, quotaId: e.quotaId, period: e.period, postgres: e.postgres, pending: e.pending, redis: redisUsed, difference: redisUsed - expected, later, degraded, real });
  }
  return out;
}
