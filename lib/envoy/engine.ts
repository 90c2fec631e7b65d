/**
 * `ShouldRateLimit` for the domains of the policy's `rateLimitService` section, as
 * envoyproxy/ratelimit answers it (docs/envoy-ratelimit.md), around the pure core
 * lib/policy/envoy/decide.ts. One call, top to bottom in `decide`:
 * 1. the plan (`planEnvoyRequest`): per descriptor its rule, its cost and its counter;
 * 2. the counts: their fixed window for every descriptor of the call in one atomic script
 *    (lib/envoy/counter-store.ts), Sluice's algorithms (a rule's `algorithm`, `window`, `period`) through
 *    the counter store, one decision per descriptor (started in the same turn: the Redis store
 *    sends them as one DECIDE call), all through the circuit breaker, within the store budget;
 * 3. the response (`envoyResponse`), and the call's accounting: usage and /metrics (./accounting.ts).
 *
 * When the store fails, times out or the breaker is open, each rule's failure mode answers for
 * its descriptor (its `failureMode`, else the policy's `defaults.failureMode`): `open` OK,
 * `closed` OVER_LIMIT, `local` counted in this process against its share of the limit
 * (`requests_per_unit / SLUICE_INSTANCES`). The budget is REDIS_TIMEOUT_MS, or 4 × it when every
 * counted rule of the call is `closed` (the engine's rule: a fail-closed answer gains nothing from
 * giving up early). A call that timed out is never retried.
 */
import type { CompiledPolicy } from "../policy/compiled";
import { counterKeys, IN_PROCESS } from "../policy/counter-keys";
import type { CompiledEnvoyRule } from "../policy/envoy/compiled";
import { envoyResponse, planEnvoyRequest, type EnvoyCount, type EnvoyDescriptorPlan, type EnvoyLimitPlan, type EnvoyPlan, type EnvoyRequest, type EnvoyRequestError } from "../policy/envoy/decide";
import { envoyCheck } from "../policy/envoy/memory";
import type { FailureMode } from "../policy/types";
import type { EnvoyCounterStore } from "./counter-store";
import { StoreTimeoutError, type CounterStore, type LimitCheck } from "../store/types";
import type { CircuitBreaker } from "../decision/breaker";
import { EnvoyAccounting, type EnvoyDecided } from "./accounting";
import { NotReadyError } from "../decision/engine";
import { closedWaitMs } from "../decision/failure-path";
import type { DecisionMetrics } from "../decision/metrics";
import type { UsageError, UsageSink } from "../decision/ports";

export interface EnvoyDeciderDeps {
  policy: () => CompiledPolicy | null;
  /** Their fixed window (Redis: one ENVOY_COUNT call per ShouldRateLimit). */
  counters: EnvoyCounterStore;
  /** Sluice's algorithms, for rules that name one (the engine's store). */
  store: CounterStore;
  /** Failure mode `local`: the in-process twins, on the store's clock. */
  localCounters: EnvoyCounterStore;
  localStore: CounterStore;
  /** Decision server replicas: `local` counts requests_per_unit / instances. */
  instances: number;
  storeTimeoutMs: number;
  /** The engine's breaker: one view of the store's health for every kind of decision. */
  breaker: CircuitBreaker;
  /** The counter keys' deployment prefix (SLUICE_REDIS_PREFIX). */
  keyPrefix: string;
  /** The store's clock as this process estimates it (DecisionEngine.storeNowMs). */
  storeNowMs: () => number;
  metrics: DecisionMetrics | null;
  usage: UsageSink | null;
  /** Local clock (ms), for the breaker and latency. */
  now?: () => number;
}

export type EnvoyDecision = { ok: true; decided: EnvoyDecided } | { ok: false; error: EnvoyRequestError };

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };
const settle = <T>(p: Promise<T>): Promise<Settled<T>> => p.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }));

const NOTHING: ReadonlySet<number> = new Set();

/** A rule's limit as one of `instances` servers counts it alone (the engine's localShare: at least 1, 0 stays 0). */
function shareOf(rule: CompiledEnvoyRule, instances: number): CompiledEnvoyRule {
  if (instances <= 1) return rule;
  const share = (n: number) => (n === 0 ? 0 : Math.max(1, Math.floor(n / instances)));
  return { ...rule, requestsPerUnit: share(rule.requestsPerUnit), burst: share(rule.burst) };
}

export class EnvoyDecider {
  private readonly now: () => number;
  private readonly accounting: EnvoyAccounting;

  constructor(private readonly deps: EnvoyDeciderDeps) {
    this.accounting = new EnvoyAccounting(deps.metrics, deps.usage);
    const origin = performance.timeOrigin;
    this.now = deps.now ?? (() => origin + performance.now());
  }

  /** Throws NotReadyError before a policy is loaded; a bad request or a refused domain is an error value. */
  async decide(request: EnvoyRequest): Promise<EnvoyDecision> {
    const startedMs = this.now();
    const doc = this.deps.policy();
    if (!doc) throw new NotReadyError();
    const planned = planEnvoyRequest(doc.rateLimitService, request);
    if (!planned.ok) return planned;
    const plan = planned.plan;

    const counted: number[] = [];
    plan.descriptors.forEach((p, i) => p.kind === "limit" && counted.push(i));
    const counts: (EnvoyCount | null)[] = plan.descriptors.map(() => null);
    if (counted.length === 0) return this.done(plan, counts, NOTHING, this.deps.storeNowMs(), startedMs);

    const limits = counted.map((i) => plan.descriptors[i] as EnvoyLimitPlan);
    const modeOf = (p: EnvoyLimitPlan): FailureMode => p.rule.failureMode ?? doc.defaults.failureMode;
    if (!this.deps.breaker.allow(startedMs)) {
      this.storeFailed("breaker_open");
      return this.withoutStore(plan, counts, counted, modeOf, startedMs);
    }
    const timeoutMs = limits.every((p) => modeOf(p) === "closed") ? closedWaitMs(this.deps.storeTimeoutMs) : this.deps.storeTimeoutMs;

    // Theirs in one script; each Sluice-counted descriptor its own decision, started in this turn.
    const fixed = counted.filter((i) => (plan.descriptors[i] as EnvoyLimitPlan).rule.counting === "envoy");
    const algorithmic = counted.filter((i) => (plan.descriptors[i] as EnvoyLimitPlan).rule.counting !== "envoy");
    const fixedCall = fixed.length === 0 ? null : settle(this.deps.counters.count(fixed.map((i) => this.fixedInput(plan.descriptors[i] as EnvoyLimitPlan)), { timeoutMs }));
    const algorithmCalls = algorithmic.map((i) => {
      const p = plan.descriptors[i] as EnvoyLimitPlan;
      return settle(this.deps.store.check([this.algorithmCheck(p, this.deps.keyPrefix)], { cost: p.hits, dryRun: p.hits === 0, timeoutMs }));
    });
    const [fixedResult, ...algorithmResults] = await Promise.all([fixedCall, ...algorithmCalls]);

    let nowMs: number | null = null;
    let failure: unknown = null;
    const unanswered: number[] = [];
    if (fixedResult) {
      if (fixedResult.ok) {
        nowMs = fixedResult.value.nowMs;
        fixed.forEach((i, n) => (counts[i] = { counting: "envoy", after: fixedResult.value.counts[n]! }));
      } else {
        failure = fixedResult.error;
        unanswered.push(...fixed);
      }
    }
    algorithmResults.forEach((r, n) => {
      const i = algorithmic[n]!;
      if (r!.ok) {
        nowMs ??= r!.value.nowMs;
        counts[i] = { counting: "sluice", outcome: r!.value.outcomes[0]! };
      } else {
        failure ??= r!.error;
        unanswered.push(i);
      }
    });
    if (failure === null) {
      this.deps.breaker.success(this.now());
      return this.done(plan, counts, NOTHING, nowMs ?? this.deps.storeNowMs(), startedMs);
    }
    this.storeFailed(failure instanceof StoreTimeoutError ? "redis_timeout" : "redis_error");
    return this.withoutStore(plan, counts, unanswered, modeOf, startedMs, nowMs);
  }

  /** A store failure, reported as the engine reports its own: the breaker, `/metrics`, usage. */
  private storeFailed(cause: UsageError): void {
    if (cause !== "breaker_open") this.deps.breaker.failure(this.now());
    this.deps.metrics?.redisErrors.inc({ kind: cause === "redis_timeout" ? "timeout" : cause === "breaker_open" ? "breaker_open" : "error" });
    this.deps.usage?.recordError(this.deps.storeNowMs(), cause);
  }

  /** The descriptors `unanswered` decided by their rules' failure modes; the others as counted (at `countedAtMs`, the store's clock when one part answered). */
  private async withoutStore(plan: EnvoyPlan, counts: (EnvoyCount | null)[], unanswered: readonly number[], modeOf: (p: EnvoyLimitPlan) => FailureMode, startedMs: number, countedAtMs: number | null = null): Promise<EnvoyDecision> {
    const nowMs = countedAtMs ?? this.deps.storeNowMs();
    const descriptors: EnvoyDescriptorPlan[] = [...plan.descriptors];
    for (const i of unanswered) {
      const p = plan.descriptors[i] as EnvoyLimitPlan;
      const mode = modeOf(p);
      if (mode !== "local") {
        counts[i] = { counting: "unavailable", failureMode: mode };
        continue;
      }
      const share: EnvoyLimitPlan = { ...p, rule: shareOf(p.rule, this.deps.instances) };
      descriptors[i] = share;
      if (share.rule.counting === "envoy") {
        const { counts: [after] } = await this.deps.localCounters.count([this.fixedInput(share, IN_PROCESS)], {});
        counts[i] = { counting: "envoy", after: after! };
      } else {
        const d = await this.deps.localStore.check([this.algorithmCheck(share, IN_PROCESS)], { cost: share.hits, dryRun: share.hits === 0 });
        counts[i] = { counting: "sluice", outcome: d.outcomes[0]! };
      }
    }
    return this.done({ ...plan, descriptors }, counts, new Set(unanswered), nowMs, startedMs);
  }

  private fixedInput(p: EnvoyLimitPlan, prefix = this.deps.keyPrefix) {
    return { key: counterKeys.envoy(p.counter.ruleId, p.counter.subject, prefix), windowSeconds: p.rule.windowMs / 1000, hits: p.hits };
  }

  /** A Sluice-counted rule as the counter store's check (a period's label is the store's to add). */
  private algorithmCheck(p: EnvoyLimitPlan, prefix: string): LimitCheck {
    return { ...envoyCheck(p), key: counterKeys.envoy(p.counter.ruleId, p.counter.subject, prefix), kind: p.rule.period ? "quota" : "limit" };
  }

  private done(plan: EnvoyPlan, counts: (EnvoyCount | null)[], degraded: ReadonlySet<number>, nowMs: number, startedMs: number): EnvoyDecision {
    const response = envoyResponse(plan, counts, nowMs);
    const decided: EnvoyDecided = { plan, response, counts, degraded, nowMs, latencyMs: this.now() - startedMs };
    this.accounting.record(decided);
    return { ok: true, decided };
  }
}
