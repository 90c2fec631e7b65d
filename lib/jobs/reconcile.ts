/**
 * Reconciliation of quota usage: Postgres (QuotaUsage, from the rollups) against the Redis quota
 * counters the decision servers enforce (`keys.quota(tenant, quotaId)` + `:<period>`, see
 * lib/store/lua/). Usage still waiting in undrained minutes is added to the Postgres side first.
 * Expected, explained differences: costs above 1 (Redis counts units, rollups count decisions) and
 * degraded decisions (passed without Redis). Anything else is reported.
 */
import type { Db } from "../db/client";
import { keys, redisPrefix } from "../redis/keys";
import { parseUsageHash, type RedisLike } from "../redis/usage";
import { PolicyHistory, quotaPeriodKey } from "./quota-defs";
import { quotaDeltas } from "./rollup";

export interface QuotaDifference {
  tenant: string;
  quotaId: string;
  period: string;
  postgres: number;
  pending: number;
  redis: number;
  /** redis − (postgres + pending); 0 when they agree. */
  difference: number;
}

export async function reconcileQuotas(db: Db, redis: RedisLike, { nowMs, prefix = redisPrefix() }: { nowMs: number; prefix?: string }): Promise<QuotaDifference[]> {
  const month = quotaPeriodKey("month", nowMs);
  const day = quotaPeriodKey("day", nowMs);
  const rows = await db.quotaUsage.findMany({ where: { period: { in: [month, day] } }, orderBy: [{ tenant: "asc" }, { quotaId: "asc" }] });
  const pending = new Map<string, number>();
  const policies = new PolicyHistory(db);
  for (const m of (await redis.smembers(keys.usageMinutes(prefix))).map(Number).filter(Number.isSafeInteger)) {
    for (const k of [keys.usageMinute(m, prefix), keys.usageClaimed(m, prefix)]) {
      const hash = await redis.hgetall(k);
      for (const d of await quotaDeltas(parseUsageHash(m, hash), policies)) {
        const id = `${d.tenant}|${d.quotaId}|${d.period}`;
        pending.set(id, (pending.get(id) ?? 0) + Number(d.used));
      }
    }
  }
  const out: QuotaDifference[] = [];
  for (const r of rows) {
    const raw = await redis.get(`${keys.quota(r.tenant, r.quotaId, prefix)}:${r.period}`);
    const id = `${r.tenant}|${r.quotaId}|${r.period}`;
    const p = pending.get(id) ?? 0;
    const redisUsed = raw === null ? 0 : Number(raw);
    out.push({ tenant: r.tenant, quotaId: r.quotaId, period: r.period, postgres: Number(r.used), pending: p, redis: redisUsed, difference: redisUsed - Number(r.used) - p });
  }
  return out;
}
