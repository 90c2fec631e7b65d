/**
 * token_bucket, as GCRA: the bucket holds `burst` tokens and refills `limit` per `window`
 * continuously; it starts full; a request of cost c passes iff at least c tokens are there.
 *
 * Kept as the equivalent meter "level": how much is owed, in units where one token is `windowMs`
 * units and the level drains by `limit` units per ms. Everything is an integer, so this file and
 * its Lua twin agree exactly (no floating refill rates): level(now) = max(0, level − elapsed × limit);
 * pass iff level(now) + c × window ≤ burst × window. The wait until a denied request fits is
 * `ceil((level(now) + c × window − burst × window) / limit)` ms, exact.
 *
 * Mode `delay` (shaping; see leaky-bucket.ts) admits a request that does not fit yet if it fits
 * within `maxDelayMs`: it passes with `delayMs`, the wait, and the meter counts it now (it holds
 * its place in the queue). Redis twin: a HASH `<key>` {l: level, t: atMs}, PEXPIRE until drained.
 */
import { allow, deny, type AlgorithmContext, type AlgorithmLimit, type AlgorithmResult } from "./types";

export interface BucketState {
  level: number;
  atMs: number;
}

export function tokenBucket(
  state: BucketState | undefined,
  limit: AlgorithmLimit,
  { nowMs, cost }: AlgorithmContext,
): AlgorithmResult<BucketState> {
  const W = limit.windowMs;
  const L = limit.limit;
  const capacity = limit.burst * W;
  const drained = state ? Math.max(0, nowMs - state.atMs) * L : 0;
  const level = state ? Math.max(0, state.level - drained) : 0;
  const needed = level + cost * W;
  const waitMs = needed > capacity ? Math.ceil((needed - capacity) / L) : 0;
  const maxDelayMs = limit.mode === "delay" ? limit.maxDelayMs : 0;
  const tokens = (owed: number) => Math.max(0, Math.floor((capacity - owed) / W));
  const idleRemaining = tokens(level);
  if (waitMs > maxDelayMs) {
    return {
      outcome: deny("rate_limited", L, idleRemaining, nowMs + Math.ceil(level / L), waitMs - maxDelayMs),
      nextState: state,
      expiresAtMs: nowMs + Math.ceil(level / L),
      idleRemaining,
    };
  }
  const drainedAtMs = nowMs + Math.ceil(needed / L);
  return {
    outcome: allow(L, tokens(needed), drainedAtMs, waitMs),
    nextState: { level: needed, atMs: nowMs },
    expiresAtMs: drainedAtMs,
    idleRemaining,
  };
}
