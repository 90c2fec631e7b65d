/**
 * sliding_window_log: exact. Every admitted request is logged with its time and cost; a request of
 * cost c passes iff the cost logged in `(now − window, now]` plus c ≤ limit. Memory grows with the
 * limit (one entry per admitted request), which is why sliding_window_counter exists.
 * Redis twin: a ZSET scored by time, member `<atMs>:<n>:<cost>` (n = live entries when added, which
 * makes members unique), trimmed and PEXPIREd to the window on every commit.
 */
import { allow, deny, type AlgorithmContext, type AlgorithmLimit, type AlgorithmResult } from "./types";

export interface LogEntry {
  atMs: number;
  cost: number;
  id: string;
}

export interface SlidingLogState {
  /** Ascending by atMs, then id. */
  entries: LogEntry[];
}

export function slidingWindowLog(
  state: SlidingLogState | undefined,
  limit: AlgorithmLimit,
  { nowMs, cost }: AlgorithmContext,
): AlgorithmResult<SlidingLogState> {
  const live = (state?.entries ?? []).filter((e) => e.atMs > nowMs - limit.windowMs);
  const used = live.reduce((sum, e) => sum + e.cost, 0);
  const idleRemaining = Math.max(0, limit.limit - used);
  const newestAtMs = live.length > 0 ? live[live.length - 1].atMs : null;
  if (used + cost > limit.limit) {
    // Wait until enough of the oldest entries have left the window (entry at t leaves at t + window).
    let stillUsed = used;
    let retryAtMs = nowMs;
    for (const entry of live) {
      if (stillUsed + cost <= limit.limit) break;
      stillUsed -= entry.cost;
      retryAtMs = entry.atMs + limit.windowMs;
    }
    const resetAtMs = newestAtMs === null ? nowMs : newestAtMs + limit.windowMs;
    return {
      outcome: deny("rate_limited", limit.limit, idleRemaining, resetAtMs, retryAtMs - nowMs),
      nextState: state,
      expiresAtMs: resetAtMs,
      idleRemaining,
    };
  }
  const entry = { atMs: nowMs, cost, id: `${nowMs}:${live.length}:${cost}` };
  return {
    outcome: allow(limit.limit, limit.limit - used - cost, nowMs + limit.windowMs),
    nextState: { entries: [...live, entry] },
    expiresAtMs: nowMs + limit.windowMs,
    idleRemaining,
  };
}
