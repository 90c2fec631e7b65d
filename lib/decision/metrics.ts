/**
 * Prometheus metrics of the decision server (prom-client 15). Labels are bounded: outcome, tier
 * and operation names come from the published policy (`*` for unmatched operations, `_` for an
 * unknown tenant's tier) — never a key, a tenant slug or an IP (docs/pitfalls.md: label cardinality).
 */
import { Counter, Gauge, type Metric, Registry, collectDefaultMetrics } from "prom-client";
import { DENIAL_REASONS } from "../policy/denial-reasons";
import type { Reason } from "../policy/types";
import type { BreakerState } from "./breaker";

/** Each denial reason's slot in a cell's counts, computed once: a denial costs no string building. */
const REASON_SLOT: Partial<Record<Reason, number>> = Object.fromEntries(DENIAL_REASONS.map((r, i) => [r, i]));

export type MetricOutcome = "allowed" | "denied" | "shadow_denied" | "degraded" | "unavailable";

export class DecisionMetrics {
  readonly registry = new Registry();
  readonly decisions: Counter<"outcome" | "tier" | "operation">;
  readonly denials: Counter<"reason" | "tier" | "operation">;
  readonly latency: LatencyHistogram;
  readonly redisErrors: Counter<"kind">;
  readonly breakerState: Gauge;
  readonly policyVersion: Gauge;
  readonly decisionsByVersion: Counter<"policy_version" | "outcome">;
  readonly rolloutCandidateVersion: Gauge;
  readonly localCacheHits: Counter<"cache">;
  readonly accuracySampled: Counter<"tier" | "limit">;
  readonly accuracyAdmitted: Counter<"tier" | "limit" | "by">;
  readonly accuracySampleRatio: Gauge;
  readonly accuracyTolerance: Gauge<"tier" | "limit">;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const r = this.registry;
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: r });
    const flushDecisions = () => this.flushDecisions();
    this.decisions = counter(r, "sluice_decisions_total", "Decisions made, by outcome, tier and operation.", ["outcome", "tier", "operation"], flushDecisions);
    // The decision API's reasons (a bounded set), so a 429 share can count 429s only, as the dashboards do.
    const denialsHelp = "Denied decisions (401, 403, 429, 503), by the answer's reason, tier and operation.";
    this.denials = counter(r, "sluice_denials_total", denialsHelp, ["reason", "tier", "operation"], flushDecisions);
    this.latency = new LatencyHistogram(
      "sluice_decision_duration_seconds",
      "Time to decide (engine, excluding HTTP parsing), by outcome.",
      [0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
    );
    r.registerMetric(this.latency as unknown as Metric);
    this.redisErrors = counter(r, "sluice_redis_errors_total", "Counter store failures on the decision path, by kind (error, timeout, breaker_open).", ["kind"]);
    this.breakerState = gauge(r, "sluice_breaker_state", "Circuit breaker state: 0 closed, 1 open, 2 half-open.");
    this.policyVersion = gauge(r, "sluice_policy_version", "Version of the policy document this server enforces (0: none loaded).");
    // A guarded rollout's cohort and control side by side: bounded, a server decides with at most two versions at once.
    const byVersionHelp = "Decisions made, by the policy version that decided (during a guarded rollout: the cohort's candidate or the live version) and outcome.";
    this.decisionsByVersion = counter(r, "sluice_decisions_by_policy_version_total", byVersionHelp, ["policy_version", "outcome"], () => this.flushVersions());
    const candidateHelp = "The version a running guarded rollout gives its cohort (0: no rollout; everyone gets sluice_policy_version).";
    this.rolloutCandidateVersion = gauge(r, "sluice_rollout_candidate_version", candidateHelp);
    const cacheHitsHelp = "Answers taken from a local cache instead of Redis, by cache (deny, key).";
    this.localCacheHits = counter(r, "sluice_local_cache_hits_total", cacheHitsHelp, ["cache"], () => this.flushCacheHits());
    // The live accuracy meter (lib/decision/accuracy.ts).
    const sampledHelp = "Decisions of subjects the accuracy meter samples (not dry runs), by tier and limit.";
    this.accuracySampled = counter(r, "sluice_accuracy_sampled_total", sampledHelp, ["tier", "limit"]);
    const admittedHelp = "Sampled requests admitted, by the limit (by=limit) and by an exact sliding-window log of the same limit (by=exact_log).";
    this.accuracyAdmitted = counter(r, "sluice_accuracy_admitted_total", admittedHelp, ["tier", "limit", "by"]);
    const ratioHelp = "SLUICE_ACCURACY_SAMPLE: the fraction of approximate-limit subjects the accuracy meter samples.";
    this.accuracySampleRatio = gauge(r, "sluice_accuracy_sample_ratio", ratioHelp);
    const toleranceHelp = "The policy's accuracy tolerance per approximate limit (requirements block; default 0.05): alert when admissions diverge by more.";
    this.accuracyTolerance = gauge(r, "sluice_accuracy_tolerance_ratio", toleranceHelp, ["tier", "limit"]);
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

  // The decision path counts in plain numbers (no prom-client call, no labels object hashed per
  // decision); prom-client's counters catch up when /metrics is read (their collect()), so every
  // scrape shows exactly the decisions made until then.
  /** outcome → tier → operation → the count, and (denials) the count per reason slot. */
  private readonly decisionCounts = new Map<string, Map<string, Map<string, { count: number; byReason: number[] | null }>>>();
  private readonly cacheHitCounts = { deny: 0, key: 0 };

  /** An answer taken from a local cache instead of Redis. */
  cacheHit(cache: "deny" | "key"): void {
    this.cacheHitCounts[cache]++;
  }

  /** One decision: its count and latency, and for a denial (`reason` not null nor `ok`) its count by reason. */
  recordDecision(outcome: MetricOutcome, tier: string, operation: string, seconds: number, reason: Reason | null = null): void {
    // Nested maps keyed by the policy's own strings: no label string built per decision.
    let byTier = this.decisionCounts.get(outcome);
    if (byTier === undefined) this.decisionCounts.set(outcome, (byTier = new Map()));
    let byOperation = byTier.get(tier);
    if (byOperation === undefined) {
      // Bounded: label sets come from the policy, but a long-lived server sees many versions.
      if (byTier.size >= 1_000) this.flushDecisions();
      byTier.set(tier, (byOperation = new Map()));
    }
    let cell = byOperation.get(operation);
    if (cell === undefined) {
      if (byOperation.size >= 1_000) this.flushDecisions();
      byOperation.set(operation, (cell = { count: 0, byReason: null }));
    }
    cell.count++;
    const slot = reason === null ? undefined : REASON_SLOT[reason];
    if (slot !== undefined) (cell.byReason ??= new Array<number>(DENIAL_REASONS.length).fill(0))[slot]!++;
    this.latency.series(outcome).observe(seconds);
  }

  /** Moves the counts made since the last scrape into prom-client's counters (their collect()). */
  private flushDecisions(): void {
    for (const [outcome, byTier] of this.decisionCounts) {
      for (const [tier, byOperation] of byTier) {
        for (const [operation, cell] of byOperation) {
          if (cell.count > 0) this.decisions.inc({ outcome, tier, operation }, cell.count);
          cell.byReason?.forEach((n, i) => n > 0 && this.denials.inc({ reason: DENIAL_REASONS[i]!, tier, operation }, n));
        }
      }
    }
    this.decisionCounts.clear();
  }

  private readonly versionCounts = new Map<number, Map<MetricOutcome, { count: number }>>();

  /** One decision's count by the version that decided it. */
  recordVersion(version: number, outcome: MetricOutcome): void {
    let byOutcome = this.versionCounts.get(version);
    if (byOutcome === undefined) this.versionCounts.set(version, (byOutcome = new Map()));
    let cell = byOutcome.get(outcome);
    if (cell === undefined) byOutcome.set(outcome, (cell = { count: 0 }));
    cell.count++;
  }

  private flushVersions(): void {
    for (const [version, byOutcome] of this.versionCounts) {
      for (const [outcome, cell] of byOutcome) if (cell.count > 0) this.decisionsByVersion.inc({ policy_version: String(version), outcome }, cell.count);
    }
    this.versionCounts.clear();
  }

  private flushCacheHits(): void {
    for (const cache of ["deny", "key"] as const) {
      const n = this.cacheHitCounts[cache];
      if (n > 0) this.localCacheHits.inc({ cache }, n);
      this.cacheHitCounts[cache] = 0;
    }
  }

  setBreaker(state: BreakerState): void {
    this.breakerState.set(state === "closed" ? 0 : state === "open" ? 1 : 2);
  }
}

/** A counter on `registry`; `collect` brings it up to date when /metrics is read. */
function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[], collect?: () => void): Counter<L> {
  return new Counter({ name, help, labelNames, registers: [registry], collect });
}

function gauge<L extends string = string>(registry: Registry, name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
  return new Gauge({ name, help, labelNames, registers: [registry] });
}

/** One outcome's latency buckets (counts per bucket, not cumulative), sum and count. */
class LatencySeries {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(seconds: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += seconds;
    this.count++;
  }
}

/**
 * A Prometheus histogram with one label, `outcome`, kept as plain numbers: observing is a bucket
 * search and three additions. Its `get()` answers what prom-client's Histogram answers, so the text
 * format and cross-process aggregation are unchanged.
 */
export class LatencyHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly byOutcome = new Map<string, LatencySeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly bounds: readonly number[],
  ) {}

  series(outcome: string): LatencySeries {
    let s = this.byOutcome.get(outcome);
    if (s === undefined) this.byOutcome.set(outcome, (s = new LatencySeries(this.bounds)));
    return s;
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: { labels: Record<string, string | number>; value: number; metricName: string }[] } {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const [outcome, s] of this.byOutcome) {
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += s.counts[i]!;
        values.push({ labels: { le, outcome }, value: acc, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { le: "+Inf", outcome }, value: s.count, metricName: `${this.name}_bucket` });
      values.push({ labels: { outcome }, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { outcome }, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
