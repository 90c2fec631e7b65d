/**
 * Shared shapes of the pure limiter algorithms. Each algorithm is one function
 * `(state, limit, { nowMs, cost }) → { outcome, nextState, expiresAtMs, idleRemaining }`:
 * no clock, no I/O. `outcome` describes the request as if it were committed; `nextState` is the
 * state after committing it (equal to `state` when it does not pass); `expiresAtMs` is when that
 * state is worth nothing any more (the Redis twin sets the same PEXPIRE). The stores decide whether
 * to commit (all-or-nothing across checks); `idleRemaining` is `remaining` when nothing is committed.
 */
import type { QuotaWindow } from "../quota-window";
import type { Mode, Overage, Period, Reason } from "../types";

/** The numbers of one limit, in ms. Structurally a subset of lib/store/types.ts LimitCheck. */
export interface AlgorithmLimit {
  limit: number;
  windowMs: number;
  burst: number;
  precision: number;
  mode: Mode;
  maxDelayMs: number;
  leaseTtlMs: number;
  period?: Period;
  overage?: Overage;
  /** A tenant quota's billing periods as planned (../quota-window.ts); absent: the UTC calendar `period`. */
  quotaWindow?: QuotaWindow;
}

export interface AlgorithmContext {
  nowMs: number;
  /** Units this request consumes (integer ≥ 1). */
  cost: number;
}

export type OutcomeReason = Extract<
  Reason,
  "ok" | "rate_limited" | "quota_exhausted" | "concurrency_limited" | "cost_exceeds_limit"
>;

/** The answer for one check (lib/store/types.ts CheckOutcome adds the accuracy meter's sample). Times are absolute ms on the caller's clock. */
export interface LimitOutcome {
  allowed: boolean;
  /** `ok` when allowed, else why this check denies. */
  reason: OutcomeReason;
  limit: number;
  remaining: number;
  /** When this counter is back to full (or the window resets). */
  resetAtMs: number;
  /** 0 when allowed; else the wait after which the same request passes if nothing else consumes. */
  retryAfterMs: number;
  /** Shaping wait for delay-mode limits (≤ maxDelayMs); 0 otherwise. */
  delayMs: number;
  /** Set when a shadow-mode check would have denied; the request is not denied for it. */
  shadowDenied?: boolean;
  /** For concurrency checks that passed: the lease to release. */
  leaseId?: string;
  /** For `overage: bill` quotas: units used beyond the quota by this request. */
  overage?: number;
}

export interface AlgorithmResult<S> {
  outcome: LimitOutcome;
  nextState: S | undefined;
  /** When `nextState` can be forgotten (absolute ms); the Redis twin's PEXPIRE. */
  expiresAtMs: number;
  /** `remaining` if this request is not committed (denied elsewhere, or a dry run). */
  idleRemaining: number;
}

export function allow(limit: number, remaining: number, resetAtMs: number, delayMs = 0): LimitOutcome {
  return { allowed: true, reason: "ok", limit, remaining, resetAtMs, retryAfterMs: 0, delayMs };
}

export function deny(
  reason: OutcomeReason,
  limit: number,
  remaining: number,
  resetAtMs: number,
  retryAfterMs: number,
): LimitOutcome {
  return { allowed: false, reason, limit, remaining, resetAtMs, retryAfterMs, delayMs: 0 };
}
