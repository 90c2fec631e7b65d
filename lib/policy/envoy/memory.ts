/**
 * The counters of `rateLimitService` decisions in memory: their fixed window as a map of
 * INCRBY counters (what src/redis/fixed_cache_impl.go pipelines to Redis), and Sluice's algorithms
 * as their pure functions over stored states. With `decideEnvoy` this is the whole behaviour of an
 * Envoy domain without Redis: the conformance suite runs on it, and a Redis backend must answer
 * the same (its keys are the same: lib/policy/counter-keys.ts `envoy`).
 */
import { evaluateCheck, type AnyState, type EngineCheck } from "../algorithms";
import { counterKeys, IN_PROCESS } from "../counter-keys";
import { quotaPeriod } from "../quota-period";
import type { CompiledEnvoyService } from "./compiled";
import { envoyResponse, envoyWindow, planEnvoyRequest, type EnvoyCount, type EnvoyLimitPlan, type EnvoyPlan, type EnvoyRequest, type EnvoyRequestError, type EnvoyResponse } from "./decide";

/** The check a Sluice-counted rule is to `evaluateCheck` (always in reject mode: shadow is the answer's business). */
export function envoyCheck(p: EnvoyLimitPlan): EngineCheck {
  const rule = p.rule;
  return {
    algorithm: rule.counting === "envoy" ? "fixed_window" : rule.counting,
    limit: rule.requestsPerUnit,
    windowMs: rule.windowMs,
    burst: rule.burst,
    precision: rule.precision,
    mode: "reject",
    maxDelayMs: 0,
    leaseTtlMs: 0,
    ...(rule.period ? { period: rule.period, overage: "block" as const } : {}),
  };
}

/** The Redis key of a planned descriptor's counter at `nowMs` (their fixed window and periods carry their window in the key). */
export function envoyCounterKey(p: EnvoyLimitPlan, nowMs: number, prefix: string): string {
  const base = counterKeys.envoy(p.counter.ruleId, p.counter.subject, prefix);
  if (p.rule.counting === "envoy") return `${base}:${envoyWindow(p.rule, nowMs).startMs / 1000}`;
  if (p.rule.period) return `${base}:${quotaPeriod(nowMs, p.rule.period).label}`;
  return base;
}

export class EnvoyMemoryCounters {
  private readonly counters = new Map<string, { count: number; expiresAtMs: number }>();
  private readonly states = new Map<string, { state: AnyState | undefined; expiresAtMs: number }>();

  /** INCRBY with the key's TTL set again, as theirs pipelines it; returns the count after. */
  incrBy(key: string, by: number, ttlMs: number, nowMs: number): number {
    const cell = this.counters.get(key);
    const count = (cell && cell.expiresAtMs > nowMs ? cell.count : 0) + by;
    this.counters.set(key, { count, expiresAtMs: nowMs + ttlMs });
    return count;
  }

  /** One descriptor counted as its rule says. */
  count(p: EnvoyLimitPlan, nowMs: number): EnvoyCount {
    const key = envoyCounterKey(p, nowMs, IN_PROCESS);
    if (p.rule.counting === "envoy") return { counting: "envoy", after: this.incrBy(key, p.hits, p.rule.windowMs, nowMs) };
    const stored = this.states.get(key);
    const state = stored && stored.expiresAtMs > nowMs ? stored.state : undefined;
    const r = evaluateCheck(state, envoyCheck(p), { nowMs, cost: p.hits });
    // hits 0 looks without counting; a denied request consumes nothing (Sluice's algorithms).
    if (p.hits > 0 && r.consumes) this.states.set(key, { state: r.nextState, expiresAtMs: r.expiresAtMs });
    return { counting: "sluice", outcome: r.outcome };
  }
}

export type EnvoyDecision = { ok: true; plan: EnvoyPlan; response: EnvoyResponse } | { ok: false; error: EnvoyRequestError };

/** `ShouldRateLimit` against in-memory counters at `nowMs`. */
export function decideEnvoy(service: CompiledEnvoyService | undefined, request: EnvoyRequest, counters: EnvoyMemoryCounters, nowMs: number): EnvoyDecision {
  const planned = planEnvoyRequest(service, request);
  if (!planned.ok) return planned;
  const counts = planned.plan.descriptors.map((p) => (p.kind === "limit" ? counters.count(p, nowMs) : null));
  return { ok: true, plan: planned.plan, response: envoyResponse(planned.plan, counts, nowMs) };
}
