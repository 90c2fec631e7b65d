/**
 * The engine's cold path (docs/failure-modes.md), when the counter store fails, times out or the
 * breaker is open; kept apart so that ./engine.ts `decide` reads as the path a healthy decision takes.
 * The operation's failure mode decides: `open` allows with `degraded: true`, `closed` answers 503,
 * `local` checks an in-process store with every limit divided by the number of instances.
 */
import type { FailureMode } from "../policy/types";
import { StoreTimeoutError, type CounterStore } from "../store/types";
import { type AnswerContext, plainAnswer } from "./answer";
import type { CircuitBreaker } from "./breaker";
import { localShare, type PlannedCheck } from "./checks";
import { answerDecision, type Decided, decidedWithout } from "./decide";
import type { DecisionMetrics } from "./metrics";
import type { UsageError, UsageSink } from "./ports";

/** How long a fail-closed operation waits for the store before answering 503 (DecisionEngine budgetFor). */
export function closedWaitMs(storeTimeoutMs: number): number {
  return Math.max(storeTimeoutMs * 4, 100);
}

/** What the failure path reports to and falls back on: EngineDeps, declared here because ./engine.ts imports this file. */
interface FailureDeps {
  breaker: Pick<CircuitBreaker, "success" | "failure">;
  metrics: Pick<DecisionMetrics, "redisErrors"> | null;
  usage: Pick<UsageSink, "recordError"> | null;
  localStore: Pick<CounterStore, "check">;
  instances: number;
}

/** Counts a store failure in the metrics and the usage record (at `atMs`). */
function reportError(deps: FailureDeps, error: UsageError, atMs: number): UsageError {
  deps.metrics?.redisErrors.inc({ kind: error === "redis_error" ? "error" : error === "redis_timeout" ? "timeout" : "breaker_open" });
  deps.usage?.recordError(atMs, error);
  return error;
}

/** The store answered, without the key index (it lost it): a store error to report, not a breaker failure. */
export function indexMissing(deps: FailureDeps, nowMs: number, startedMs: number): UsageError {
  deps.breaker.success(nowMs);
  return reportError(deps, "redis_error", startedMs);
}

/** The store failed or timed out (`atMs`: the store's clock, for the usage record). */
export function storeFailed(deps: FailureDeps, error: unknown, nowMs: number, atMs: number): UsageError {
  deps.breaker.failure(nowMs);
  return reportError(deps, error instanceof StoreTimeoutError ? "redis_timeout" : "redis_error", atMs);
}

/** What the failure path needs of the decision under way (a DecisionRun). */
type FailedRun = { ctx: AnswerContext; failureMode: FailureMode; cost: number; dryRun: boolean; explain: boolean };

/**
 * The answer without the counter store, by the operation's failure mode (`planned`: the checks for
 * `local`; `atMs`: the store's clock, for the usage record of an open breaker).
 */
export async function decideWithoutStore(deps: FailureDeps, run: FailedRun, cause: UsageError, planned: readonly PlannedCheck[] | null, atMs: number): Promise<Decided> {
  if (cause === "breaker_open") reportError(deps, "breaker_open", atMs);
  if (run.failureMode === "closed") return decidedWithout(plainAnswer(run.ctx, 503, "store_unavailable"));
  if (run.failureMode === "local" && planned !== null) {
    const checks = localShare(planned.map((p) => p.check), deps.instances);
    try {
      const decision = await deps.localStore.check(checks, { cost: run.cost, dryRun: run.dryRun });
      // The shares' own RateLimit-Policy (the plan's names the full limit).
      const localPlanned = planned.map(({ policyHeader: _full, ...p }, i) => ({ ...p, check: checks[i]! }));
      return answerDecision(run, decision, localPlanned, { degraded: true });
    } catch {
      // The in-process store failing is a bug; fall through to fail open rather than 5xx.
    }
  }
  const answer = plainAnswer(run.ctx, 200, "ok");
  answer.degraded = true;
  if (run.dryRun) answer.dryRun = true;
  return decidedWithout(answer);
}
