/**
 * concurrency: at most `limit` units in flight. A request of cost c that passes takes a lease of c
 * units that lasts until released or `leaseTtlMs` after it was taken, whichever comes first (a
 * crashed caller cannot hold a slot forever). retryAfterMs assumes no release: the wait until
 * enough leases expire.
 * Redis twin: a ZSET `<key>` of lease unit → expiry ms (c members `<token>:<j>` per lease), and
 * per lease a record of the units it was granted (lib/store/lua/concurrency.ts).
 */
import { allow, deny, type AlgorithmContext, type AlgorithmLimit, type AlgorithmResult } from "./types";

export interface ConcurrencyState {
  /**
   * Lease token → the units it holds (`cost`), the units it was granted (`granted`: what its lease
   * id names; a settle lowers `cost`, never `granted`) and its expiry.
   */
  leases: Record<string, { cost: number; granted: number; expiresAtMs: number }>;
}

export interface ConcurrencyContext extends AlgorithmContext {
  /** Unique token of the lease this request takes if it passes (the store generates it). */
  leaseToken: string;
}

export function concurrency(
  state: ConcurrencyState | undefined,
  limit: AlgorithmLimit,
  { nowMs, cost, leaseToken }: ConcurrencyContext,
): AlgorithmResult<ConcurrencyState> {
  const live = Object.entries(state?.leases ?? {}).filter(([, l]) => l.expiresAtMs > nowMs);
  const used = live.reduce((sum, [, l]) => sum + l.cost, 0);
  const lastExpiryMs = live.reduce((max, [, l]) => Math.max(max, l.expiresAtMs), nowMs);
  const idleRemaining = Math.max(0, limit.limit - used);
  if (used + cost > limit.limit) {
    // The (used + cost − limit)-th unit to expire, counting units in expiry order.
    const expiries = live.flatMap(([, l]) => Array<number>(l.cost).fill(l.expiresAtMs)).sort((a, b) => a - b);
    const freeAtMs = expiries[used + cost - limit.limit - 1] ?? lastExpiryMs;
    return {
      outcome: deny("concurrency_limited", limit.limit, idleRemaining, lastExpiryMs, freeAtMs - nowMs),
      nextState: state,
      expiresAtMs: lastExpiryMs,
      idleRemaining,
    };
  }
  const expiresAtMs = nowMs + limit.leaseTtlMs;
  const leases = Object.fromEntries(live);
  leases[leaseToken] = { cost, granted: cost, expiresAtMs };
  const resetAtMs = Math.max(lastExpiryMs, expiresAtMs);
  return {
    outcome: allow(limit.limit, limit.limit - used - cost, resetAtMs),
    nextState: { leases },
    expiresAtMs: resetAtMs,
    idleRemaining,
  };
}

/**
 * What releasing a lease did: `released` it was live and freed; `unknown` no such live lease (never
 * granted, released already, expired); `forged` a live lease that was granted other units than the
 * id names (the id was changed): nothing is freed.
 */
export type ReleaseStatus = "released" | "unknown" | "forged";

/** Frees the lease `leaseToken` whose id names `units` (the units it was granted). */
export function releaseLease(
  state: ConcurrencyState | undefined,
  leaseToken: string,
  units: number,
  nowMs: number,
): { status: ReleaseStatus; nextState: ConcurrencyState | undefined } {
  const lease = state?.leases[leaseToken];
  if (!state || !lease || lease.expiresAtMs <= nowMs) return { status: "unknown", nextState: state };
  if (lease.granted !== units) return { status: "forged", nextState: state };
  const leases = { ...state.leases };
  delete leases[leaseToken];
  return { status: "released", nextState: { leases } };
}
