/**
 * The one month-end projection of a quota, shown on the tenant page and the dashboards
 * (lib/services/observe/usage-query.ts) and used by the replay of a draft (lib/services/justify/replay-quotas.ts):
 * use so far, at its rate so far (used ÷ time elapsed in the period), extrapolated to the period's
 * end. One function, so the two pages cannot name different run-out days for the same use.
 */

export interface QuotaProjection {
  /** `used` at the period's end at the rate so far. */
  projected: number;
  /** When `used` reaches the limit at that rate (ms); null if not within the period. */
  runsOutAt: number | null;
}

export function projectQuota(used: number, limit: number, startMs: number, endMs: number, nowMs: number): QuotaProjection {
  const elapsed = Math.min(Math.max(nowMs - startMs, 0), endMs - startMs);
  if (elapsed <= 0 || used <= 0) return { projected: used, runsOutAt: used >= limit && used > 0 ? startMs : null };
  const rate = used / elapsed;
  const projected = Math.round(rate * (endMs - startMs));
  const at = startMs + Math.ceil(limit / rate);
  return { projected, runsOutAt: limit <= 0 ? startMs : at < endMs ? at : null };
}
