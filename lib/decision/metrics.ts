/**
 * Prometheus metrics of the decision server (prom-client 15). Labels are bounded: outcome, tier
 * and operation names come from the published policy (`*` for unmatched operations, `_` for an
 * unknown tenant's tier) — never a key, a tenant slug or an IP (docs/pitfalls.md: label cardinality).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { BreakerState } from "./breaker";

export type MetricOutcome = "allowed" | "denied" | "shadow_denied" | "degraded" | "unavailable";

export class DecisionMetrics {
  readonly registry = new Registry();
  readonly decisions: Counter<"outcome" | "tier" | "operation">;
  readonly latency: Histogram<"outcome">;
  readonly redisErrors: Counter<"kind">;
  readonly breakerState: Gauge;
  readonly policyVersion: Gauge;
  readonly localCacheHits: Counter<"cache">;
  readonly accuracySampled: Counter<"tier" | "limit">;
  readonly accuracyAdmitted: Counter<"tier" | "limit" | "by">;
  readonly accuracySampleRatio: Gauge;
  readonly accuracyTolerance: Gauge<"tier" | "limit">;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    this.decisions = new Counter({
      name: "sluice_decisions_total",
      help: "Decisions made, by outcome, tier and operation.",
      labelNames: ["outcome", "tier", "operation"],
      registers: [this.registry],
    });
    this.latency = new Histogram({
      name: "sluice_decision_duration_seconds",
      help: "Time to decide (engine, excluding HTTP parsing), by outcome.",
      labelNames: ["outcome"],
      buckets: [0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
      registers: [this.registry],
    });
    this.redisErrors = new Counter({
      name: "sluice_redis_errors_total",
      help: "Counter store failures on the decision path, by kind (error, timeout, breaker_open).",
      labelNames: ["kind"],
      registers: [this.registry],
    });
    this.breakerState = new Gauge({
      name: "sluice_breaker_state",
      help: "Circuit breaker state: 0 closed, 1 open, 2 half-open.",
      registers: [this.registry],
    });
    this.policyVersion = new Gauge({
      name: "sluice_policy_version",
      help: "Version of the policy document this server enforces (0: none loaded).",
      registers: [this.registry],
    });
    this.localCacheHits = new Counter({
      name: "sluice_local_cache_hits_total",
      help: "Answers taken from a local cache instead of Redis, by cache (deny, key).",
      labelNames: ["cache"],
      registers: [this.registry],
    });
    // The live accuracy meter (lib/decision/accuracy.ts). Labels: tier and limit name, both from the policy.
    this.accuracySampled = new Counter({
      name: "sluice_accuracy_sampled_total",
      help: "Decisions of subjects the accuracy meter samples (not dry runs), by tier and limit.",
      labelNames: ["tier", "limit"],
      registers: [this.registry],
    });
    this.accuracyAdmitted = new Counter({
      name: "sluice_accuracy_admitted_total",
      help: "Sampled requests admitted, by the limit (by=limit) and by an exact sliding-window log of the same limit (by=exact_log).",
      labelNames: ["tier", "limit", "by"],
      registers: [this.registry],
    });
    this.accuracySampleRatio = new Gauge({
      name: "sluice_accuracy_sample_ratio",
      help: "SLUICE_ACCURACY_SAMPLE: the fraction of approximate-limit subjects the accuracy meter samples.",
      registers: [this.registry],
    });
    this.accuracyTolerance = new Gauge({
      name: "sluice_accuracy_tolerance_ratio",
      help: "The policy's accuracy tolerance per approximate limit (requirements block; default 0.05): alert when admissions diverge by more.",
      labelNames: ["tier", "limit"],
      registers: [this.registry],
    });
  }

  private readonly accuracyChildren = new Map<string, { sampled: { inc(): void }; limit: { inc(): void }; exact: { inc(): void } }>();

  /** One sampled check of one decision. */
  recordAccuracy(tier: string, sample: { limit: string; limitAdmitted: boolean; exactAdmitted: boolean }): void {
    const id = `${tier}|${sample.limit}`;
    let c = this.accuracyChildren.get(id);
    if (c === undefined) {
      if (this.accuracyChildren.size >= 10_000) this.accuracyChildren.clear();
      const labels = { tier, limit: sample.limit };
      c = {
        sampled: this.accuracySampled.labels(labels),
        limit: this.accuracyAdmitted.labels({ ...labels, by: "limit" }),
        exact: this.accuracyAdmitted.labels({ ...labels, by: "exact_log" }),
      };
      this.accuracyChildren.set(id, c);
    }
    c.sampled.inc();
    if (sample.limitAdmitted) c.limit.inc();
    if (sample.exactAdmitted) c.exact.inc();
  }

  /** The tolerance of every approximate limit of a newly loaded policy (replaces the previous policy's). */
  setAccuracyTolerances(tolerances: readonly { tier: string; limit: string; tolerance: number }[]): void {
    this.accuracyTolerance.reset();
    for (const t of tolerances) this.accuracyTolerance.set({ tier: t.tier, limit: t.limit }, t.tolerance);
  }

  // prom-client hashes a labels object on every inc/observe; the children of the few label sets a
  // policy can produce are looked up once and kept (bounded: cleared past 10,000 sets).
  private readonly decisionChildren = new Map<string, { inc(): void }>();
  private readonly latencyChildren = new Map<string, { observe(value: number): void }>();

  private readonly cacheHitChildren = new Map<"deny" | "key", { inc(): void }>();

  /** An answer taken from a local cache instead of Redis. */
  cacheHit(cache: "deny" | "key"): void {
    let counter = this.cacheHitChildren.get(cache);
    if (counter === undefined) {
      counter = this.localCacheHits.labels({ cache });
      this.cacheHitChildren.set(cache, counter);
    }
    counter.inc();
  }

  /** One decision: its count by outcome, tier and operation, and its latency by outcome. */
  recordDecision(outcome: MetricOutcome, tier: string, operation: string, seconds: number): void {
    const id = `${outcome}|${tier}|${operation}`;
    let counter = this.decisionChildren.get(id);
    if (counter === undefined) {
      if (this.decisionChildren.size >= 10_000) this.decisionChildren.clear();
      counter = this.decisions.labels({ outcome, tier, operation });
      this.decisionChildren.set(id, counter);
    }
    counter.inc();
    let histogram = this.latencyChildren.get(outcome);
    if (histogram === undefined) {
      histogram = this.latency.labels({ outcome });
      this.latencyChildren.set(outcome, histogram);
    }
    histogram.observe(seconds);
  }

  setBreaker(state: BreakerState): void {
    this.breakerState.set(state === "closed" ? 0 : state === "open" ? 1 : 2);
  }
}
