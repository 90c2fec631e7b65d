/**
 * fixed_window: a counter per epoch-aligned window `[floor(now / window) · window, +window)`;
 * a request of cost c passes iff `count + c ≤ limit`. Lets up to 2× limit through around a window
 * edge (the last instant of one window and the first of the next): cheap, and honest about it.
 * Redis twin: a string `<key>:<windowStartMs>` (INCRBY + PEXPIRE to the window's end).
 */
import { allow, deny, type AlgorithmContext, type AlgorithmLimit, type AlgorithmResult } from "./types";

export interface FixedWindowState {
  windowStartMs: number;
  count: number;
}

export function fixedWindow(
  state: FixedWindowState | undefined,
  limit: AlgorithmLimit,
  { nowMs, cost }: AlgorithmContext,
): AlgorithmResult<FixedWindowState> {
  const windowStartMs = Math.floor(nowMs / limit.windowMs) * limit.windowMs;
  const resetAtMs = windowStartMs + limit.windowMs;
  const count = state && state.windowStartMs === windowStartMs ? state.count : 0;
  const idleRemaining = Math.max(0, limit.limit - count);
  if (count + cost > limit.limit) {
    // The next window starts empty, and cost ≤ limit (else cost_exceeds_limit): it passes then.
    return {
      outcome: deny("rate_limited", limit.limit, idleRemaining, resetAtMs, resetAtMs - nowMs),
      nextState: state,
      expiresAtMs: resetAtMs,
      idleRemaining,
    };
  }
  return {
    outcome: allow(limit.limit, limit.limit - count - cost, resetAtMs),
    nextState: { windowStartMs, count: count + cost },
    expiresAtMs: resetAtMs,
    idleRemaining,
  };
}
