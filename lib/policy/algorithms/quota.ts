/**
 * Quotas: a budget per period. With a `quotaWindow` (every tenant quota the decision path plans:
 * the tenant's billing periods, ../quota-window.ts) the period is the window's slot at `nowMs`;
 * without one (an Envoy rule, the limit probe), the UTC calendar day or month (../quota-period.ts).
 * A request of cost c passes iff `used + c ≤ limit`, where `used` adds the carried counter of a
 * plan change (`carriedUsed`, read by the store) and `limit` is the slot's; with `overage: bill` it
 * always passes and reports the units beyond the quota it used (`overage`), which billing charges.
 * A quota never refills before the period ends, so a denied request's retryAfterMs is the time to
 * the next period. Redis twin: a string `<key>:<label>` (INCRBY, PEXPIRE to the period's end).
 */
import { quotaPeriod } from "../quota-period";
import { pickSlot } from "../quota-window";
import { allow, deny, type AlgorithmContext, type AlgorithmLimit, type AlgorithmResult } from "./types";

export interface QuotaState {
  periodStartMs: number;
  used: number;
}

export function quota(
  state: QuotaState | undefined,
  limit: AlgorithmLimit,
  { nowMs, cost }: AlgorithmContext,
  /** The carried counter's units in this period (a plan change under `full`), read by the store. */
  carriedUsed = 0,
): AlgorithmResult<QuotaState> {
  const period = limit.quotaWindow ? pickSlot(limit.quotaWindow, nowMs) : { ...quotaPeriod(nowMs, limit.period ?? "month"), limit: limit.limit };
  const own = state && state.periodStartMs === period.startMs ? state.used : 0;
  const used = own + carriedUsed;
  const cap = period.limit;
  const idleRemaining = Math.max(0, cap - used);
  const nextState = { periodStartMs: period.startMs, used: own + cost };
  if (limit.overage === "bill") {
    const overage = Math.max(0, used + cost - cap) - Math.max(0, used - cap);
    const outcome = allow(limit.limit, Math.max(0, cap - used - cost), period.endMs);
    return { outcome: { ...outcome, overage }, nextState, expiresAtMs: period.endMs, idleRemaining };
  }
  if (used + cost > cap) {
    return {
      outcome: deny("quota_exhausted", limit.limit, idleRemaining, period.endMs, period.endMs - nowMs),
      nextState: state,
      expiresAtMs: period.endMs,
      idleRemaining,
    };
  }
  return {
    outcome: allow(limit.limit, cap - used - cost, period.endMs),
    nextState,
    expiresAtMs: period.endMs,
    idleRemaining,
  };
}
