/**
 * Quotas: a budget per calendar period (UTC day or month, see ../quota-period.ts). A request of
 * cost c passes iff `used + c ≤ limit`; with `overage: bill` it always passes and reports the units
 * beyond the quota it used (`overage`), which billing charges. A quota never refills before the
 * period ends, so a denied request's retryAfterMs is the time to the next period.
 * Redis twin: a string `<key>:<label>` (INCRBY, PEXPIRE to the period's end).
 */
import { quotaPeriod } from "../quota-period";
import { allow, deny, type AlgorithmContext, type AlgorithmLimit, type AlgorithmResult } from "./types";

export interface QuotaState {
  periodStartMs: number;
  used: number;
}

export function quota(
  state: QuotaState | undefined,
  limit: AlgorithmLimit,
  { nowMs, cost }: AlgorithmContext,
): AlgorithmResult<QuotaState> {
  const period = quotaPeriod(nowMs, limit.period ?? "month");
  const used = state && state.periodStartMs === period.startMs ? state.used : 0;
  const idleRemaining = Math.max(0, limit.limit - used);
  const nextState = { periodStartMs: period.startMs, used: used + cost };
  if (limit.overage === "bill") {
    const overage = Math.max(0, used + cost - limit.limit) - Math.max(0, used - limit.limit);
    const outcome = allow(limit.limit, Math.max(0, limit.limit - used - cost), period.endMs);
    return { outcome: { ...outcome, overage }, nextState, expiresAtMs: period.endMs, idleRemaining };
  }
  if (used + cost > limit.limit) {
    return {
      outcome: deny("quota_exhausted", limit.limit, idleRemaining, period.endMs, period.endMs - nowMs),
      nextState: state,
      expiresAtMs: period.endMs,
      idleRemaining,
    };
  }
  return {
    outcome: allow(limit.limit, limit.limit - used - cost, period.endMs),
    nextState,
    expiresAtMs: period.endMs,
    idleRemaining,
  };
}
