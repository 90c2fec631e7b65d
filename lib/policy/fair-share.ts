/**
 * Weighted fair share of a global cap (`share: weighted`).
 *
 * Algorithm: guaranteed weighted shares with work-conserving borrowing, per fixed window.
 * The cap admits at most `limit` units per epoch-aligned window of `windowMs`. A tenant is *active*
 * when it asked for the cap (allowed or not) in the current or the previous window; the active
 * tenants' tier weights w₁…wₙ (W = Σ wᵢ) give each a guaranteed share `limit × wᵢ / W`.
 * A request of cost c from tenant m passes iff the window has room (`total + c ≤ limit`) and either
 *   1. it stays within m's own share: `used_m + c ≤ limit × w_m / W`, or
 *   2. it borrows only capacity nobody else is owed:
 *      `total + c + Σ_{j≠m active} max(0, limit × w_j / W − used_j) ≤ limit`.
 * Consequences, each tested in fair-share.test.ts:
 * - a tenant alone (nobody else active) may use the whole cap;
 * - under contention every active tenant can always get its weight's share of each window
 *   (⌊limit × w / W⌋ units of cost 1), so a tier gets the sum of its tenants' shares (less at most
 *   one unit per tenant, to rounding), and no tenant can take the whole cap from
 *   others: the unused part of every other active tenant's share is held back for it;
 * - capacity not owed to anybody (the shares of tenants that are not active, and whatever active
 *   tenants have already used beyond) may be borrowed by any active tenant; the unused part of an
 *   active tenant's share stays held for it until the window ends (the price of the guarantee).
 * Activity is remembered for one extra window so that a tenant that was crowded out (denied) is
 * owed its share from the first instant of the next window. A tenant appearing for the first time
 * mid-window gets what is left of that window, and its full share from the next one.
 * All comparisons are multiplied by W, so they are exact integers (weights are integers 1–1000),
 * and the Lua twin in lib/store/lua/fair-share.ts agrees exactly. Cost: O(active tenants) per decision, read
 * from two hashes in the cap's own slot.
 * Redis twin: HASH `<key>:<windowStartMs>` {t: total, u:<member>: used} and HASH `<key>:a`
 * {<member>: "<weight>:<lastWindowStartMs>"}.
 */
import { allow, deny, type AlgorithmContext, type AlgorithmLimit, type AlgorithmResult } from "./algorithms/types";

export interface FairShareState {
  windowStartMs: number;
  total: number;
  used: Record<string, number>;
  /** Member → weight and the start of the last window in which it asked. */
  active: Record<string, { weight: number; seenWindowStartMs: number }>;
}

export interface FairShareContext extends AlgorithmContext {
  member: string;
  weight: number;
}

export interface FairShareResult extends AlgorithmResult<FairShareState> {
  /** The state with only the member's activity recorded: kept even when the request is not committed. */
  activityState: FairShareState;
}

export function fairShare(
  state: FairShareState | undefined,
  limit: AlgorithmLimit,
  { nowMs, cost, member, weight }: FairShareContext,
): FairShareResult {
  const W = limit.windowMs;
  const windowStartMs = Math.floor(nowMs / W) * W;
  const resetAtMs = windowStartMs + W;
  const fresh = !state || state.windowStartMs !== windowStartMs;
  const total = fresh ? 0 : state.total;
  const used = fresh ? {} : state.used;
  const active: FairShareState["active"] = {};
  for (const [m, a] of Object.entries(state?.active ?? {})) {
    if (a.seenWindowStartMs >= windowStartMs - W && m !== member) active[m] = a;
  }
  active[member] = { weight, seenWindowStartMs: windowStartMs };

  const L = limit.limit;
  const weights = Object.values(active).reduce((sum, a) => sum + a.weight, 0);
  let owedToOthers = 0; // × weights
  for (const [m, a] of Object.entries(active)) {
    if (m !== member) owedToOthers += Math.max(0, L * a.weight - (used[m] ?? 0) * weights);
  }
  const mine = used[member] ?? 0;
  // What m could take now, in units: its own share left, or the free part not owed to others.
  const available = (t: number, u: number) =>
    Math.max(0, Math.min(L - t, Math.floor(Math.max(L * weight - u * weights, (L - t) * weights - owedToOthers) / weights)));
  const idleRemaining = available(total, mine);
  const activityState: FairShareState = { windowStartMs, total, used, active };
  const fits =
    total + cost <= L &&
    ((mine + cost) * weights <= L * weight || (total + cost) * weights + owedToOthers <= L * weights);
  if (!fits) {
    return {
      // In the next window m's usage starts at zero and its share is guaranteed to it.
      outcome: deny("rate_limited", L, idleRemaining, resetAtMs, resetAtMs - nowMs),
      nextState: state,
      activityState,
      expiresAtMs: resetAtMs + W,
      idleRemaining,
    };
  }
  return {
    outcome: allow(L, available(total + cost, mine + cost), resetAtMs),
    nextState: { windowStartMs, total: total + cost, used: { ...used, [member]: mine + cost }, active },
    activityState,
    expiresAtMs: resetAtMs + W,
    idleRemaining,
  };
}
