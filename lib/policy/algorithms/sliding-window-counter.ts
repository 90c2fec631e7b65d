/**
 * sliding_window_counter (docs/semantics.md): `weighted = previous × (1 − elapsed/window) + current`,
 * windows aligned to the epoch; a request of cost c passes iff `weighted + c − 1 < limit`, so in a
 * fresh window the N-th request passes and the (N+1)-th is denied.
 *
 * `precision: k` splits the window into k sub-windows of `floor(window / k)` ms (the window is
 * rounded down to a multiple of k ms) and weights only the oldest one: with counts c[i−k..i] for
 * the current sub-window i, `weighted = c[i−k] × (1 − elapsed/sub) + Σ c[i−k+1..i]`. k = 1 is the
 * plain formula. Larger k assumes less about how the oldest part was spread, so fewer excess
 * admissions at small limits, for k + 1 counters per key.
 *
 * All comparisons are done on integers scaled by the sub-window length, so this file and its Lua
 * twin (lib/store/lua/sliding-window-counter.ts) agree to the unit. Redis twin: a HASH `<key>` of sub-window index → count.
 */
import { allow, deny, type AlgorithmContext, type AlgorithmLimit, type AlgorithmResult } from "./types";

export interface SlidingCounterState {
  /** Sub-window index (floor(atMs / subMs)) → cost counted in it. */
  counts: Record<number, number>;
}

export function subWindowMs(limit: AlgorithmLimit): number {
  return Math.max(1, Math.floor(limit.windowMs / Math.max(1, limit.precision)));
}

export function slidingWindowCounter(
  state: SlidingCounterState | undefined,
  limit: AlgorithmLimit,
  { nowMs, cost }: AlgorithmContext,
): AlgorithmResult<SlidingCounterState> {
  const k = Math.max(1, limit.precision);
  const sub = subWindowMs(limit);
  const i = Math.floor(nowMs / sub);
  const counts = state?.counts ?? {};
  const at = (idx: number) => counts[idx] ?? 0;
  const L = limit.limit;

  // Does a request of `cost` fit at elapsed e (ms) into sub-window m, counts as they are?
  const fits = (m: number, e: number) => {
    let newest = 0;
    for (let j = m - k + 1; j <= m; j++) newest += at(j);
    return at(m - k) * (sub - e) + (newest + cost - 1) * sub < L * sub;
  };
  // ceil(limit − weighted), with `extra` more units counted in the current sub-window.
  const remainingWith = (extra: number) => {
    let newest = extra;
    for (let j = i - k + 1; j <= i; j++) newest += at(j);
    return Math.max(0, Math.ceil((L * sub - at(i - k) * (sub - (nowMs - i * sub))) / sub) - newest);
  };
  // The counter is back to full when its newest non-zero sub-window has slid out.
  const resetAtFrom = (newestIdx: number | null) => (newestIdx === null ? nowMs : (newestIdx + k + 1) * sub);
  let newestNonZero: number | null = null;
  for (let j = i; j >= i - k; j--) if (at(j) > 0) { newestNonZero = j; break; }

  const idleRemaining = remainingWith(0);
  if (fits(i, nowMs - i * sub)) {
    const next: Record<number, number> = {};
    for (let j = i - k; j <= i; j++) if (at(j) > 0) next[j] = at(j);
    next[i] = at(i) + cost;
    return {
      outcome: allow(L, remainingWith(cost), resetAtFrom(i)),
      nextState: { counts: next },
      expiresAtMs: (i + k + 1) * sub,
      idleRemaining,
    };
  }
  return {
    outcome: deny("rate_limited", L, idleRemaining, resetAtFrom(newestNonZero), retryAfter(i, k, sub, nowMs, fits, at, L, cost)),
    nextState: state,
    expiresAtMs: resetAtFrom(newestNonZero),
    idleRemaining,
  };
}

/** The first ms at which the same request fits, nothing else consuming: scan the next k + 1 sub-windows. */
function retryAfter(
  i: number,
  k: number,
  sub: number,
  nowMs: number,
  fits: (m: number, e: number) => boolean,
  at: (idx: number) => number,
  L: number,
  cost: number,
): number {
  for (let m = i; m <= i + k + 1; m++) {
    let newest = 0;
    for (let j = m - k + 1; j <= m; j++) newest += at(j);
    const room = L + 1 - cost - newest; // need oldest × (sub − e) < room × sub
    if (room <= 0) continue;
    const oldest = at(m - k);
    const startE = m === i ? nowMs - i * sub : 0;
    let e = oldest * sub - room * sub < 0 ? 0 : Math.floor(((oldest - room) * sub) / oldest) + 1;
    e = Math.max(e, startE);
    if (e < sub && fits(m, e)) return m * sub + e - nowMs;
  }
  return (i + k + 1) * sub - nowMs; // unreachable while cost ≤ limit: by then every count has slid out
}
