/** A limit with defaults, for the pure algorithms' tests. */
import type { AlgorithmLimit } from "../algorithms/types";

export const limitOf = (over: Partial<AlgorithmLimit> = {}): AlgorithmLimit => ({
  limit: 5,
  windowMs: 1_000,
  burst: over.burst ?? over.limit ?? 5,
  precision: 1,
  mode: "reject",
  maxDelayMs: 0,
  leaseTtlMs: 10_000,
  ...over,
});

/** Runs `n` requests at `nowMs` through an algorithm, committing each that passes. */
export function drive<S>(
  algorithm: (s: S | undefined, l: AlgorithmLimit, c: { nowMs: number; cost: number }) => { outcome: { allowed: boolean }; nextState: S | undefined },
  limit: AlgorithmLimit,
  state: S | undefined,
  nowMs: number,
  n: number,
  cost = 1,
): { state: S | undefined; allowed: boolean[] } {
  const allowed: boolean[] = [];
  for (let i = 0; i < n; i++) {
    const r = algorithm(state, limit, { nowMs, cost });
    allowed.push(r.outcome.allowed);
    if (r.outcome.allowed) state = r.nextState;
  }
  return { state, allowed };
}
