/**
 * One entry point over every algorithm: picks the algorithm of a check, then applies what is common
 * to all of them — a cost above the limit (or above the burst of a bucket) can never pass
 * (`cost_exceeds_limit`, no retry time), and shadow mode never denies (it reports `shadowDenied`
 * and consumes nothing on that counter, exactly as the limit would in reject mode).
 */
import type { Algorithm } from "../types";
import { fairShare, type FairShareState } from "../fair-share";
import { concurrency, type ConcurrencyState } from "./concurrency";
import { fixedWindow, type FixedWindowState } from "./fixed-window";
import { leakyBucket } from "./leaky-bucket";
import { quota, type QuotaState } from "./quota";
import { slidingWindowCounter, type SlidingCounterState } from "./sliding-window-counter";
import { slidingWindowLog, type SlidingLogState } from "./sliding-window-log";
import { tokenBucket, type BucketState } from "./token-bucket";
import type { AlgorithmLimit, AlgorithmResult, LimitOutcome } from "./types";

export * from "./types";
export { fixedWindow, slidingWindowLog, slidingWindowCounter, tokenBucket, leakyBucket, concurrency, quota, fairShare };
export { releaseLease } from "./concurrency";

export type AnyState =
  | FixedWindowState
  | SlidingLogState
  | SlidingCounterState
  | BucketState
  | ConcurrencyState
  | QuotaState
  | FairShareState;

export interface EngineCheck extends AlgorithmLimit {
  algorithm: Algorithm | "quota";
  fairShare?: { weight: number; member: string };
}

export interface EngineContext {
  nowMs: number;
  cost: number;
  /** Token for a concurrency lease (required for concurrency checks). */
  leaseToken?: string;
  /** Quotas: the units of the counter a plan change carries into this period (the store reads it: ../quota-window.ts). */
  carriedUsed?: number;
}

export interface EngineResult {
  outcome: LimitOutcome;
  /** Whether this check consumes when the decision passes (false: denied, or denied in shadow). */
  consumes: boolean;
  nextState: AnyState | undefined;
  expiresAtMs: number;
  idleRemaining: number;
  /** Fair share only: state with the member's demand recorded, kept even when nothing is consumed. */
  activityState?: AnyState;
}

/** The most a single request may cost on this check; anything above is `cost_exceeds_limit`. */
export function maxCost(check: EngineCheck): number {
  if (check.fairShare) return check.limit;
  if (check.algorithm === "quota" && check.overage === "bill") return Number.POSITIVE_INFINITY;
  if (check.algorithm === "token_bucket" || check.algorithm === "leaky_bucket") return check.burst;
  return check.limit;
}

function run(state: AnyState | undefined, check: EngineCheck, ctx: EngineContext): AlgorithmResult<AnyState> & { activityState?: AnyState } {
  const c = { nowMs: ctx.nowMs, cost: ctx.cost };
  if (check.fairShare) {
    return fairShare(state as FairShareState | undefined, check, { ...c, ...check.fairShare });
  }
  switch (check.algorithm) {
    case "fixed_window":
      return fixedWindow(state as FixedWindowState | undefined, check, c);
    case "sliding_window_log":
      return slidingWindowLog(state as SlidingLogState | undefined, check, c);
    case "sliding_window_counter":
      return slidingWindowCounter(state as SlidingCounterState | undefined, check, c);
    case "token_bucket":
      return tokenBucket(state as BucketState | undefined, check, c);
    case "leaky_bucket":
      return leakyBucket(state as BucketState | undefined, check, c);
    case "concurrency":
      if (!ctx.leaseToken) throw new Error("concurrency check without a lease token");
      return concurrency(state as ConcurrencyState | undefined, check, { ...c, leaseToken: ctx.leaseToken });
    case "quota":
      return quota(state as QuotaState | undefined, check, c, ctx.carriedUsed);
  }
}

export function evaluateCheck(state: AnyState | undefined, check: EngineCheck, ctx: EngineContext): EngineResult {
  const r = run(state, check, ctx);
  let outcome = r.outcome;
  if (ctx.cost > maxCost(check)) {
    outcome = { ...outcome, allowed: false, reason: "cost_exceeds_limit", retryAfterMs: 0, delayMs: 0, remaining: r.idleRemaining };
  }
  const consumes = outcome.allowed;
  if (!outcome.allowed && check.mode === "shadow") {
    outcome = { ...outcome, allowed: true, reason: "ok", retryAfterMs: 0, delayMs: 0, shadowDenied: true };
  }
  return {
    outcome,
    consumes,
    nextState: consumes ? r.nextState : state,
    expiresAtMs: r.expiresAtMs,
    idleRemaining: r.idleRemaining,
    activityState: r.activityState,
  };
}
