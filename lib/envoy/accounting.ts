/**
 * What a `rateLimitService` call is counted as (docs/envoy-ratelimit.md "Usage and metrics"): a
 * domain stands where a tenant stands and a rule where an operation and a limit stand, so the
 * usage aggregates, the rollup, the dashboards and billing carry them like any other decision.
 *
 * - Usage (lib/redis/usage.ts): one decision per descriptor that a rule decided (counted,
 *   unlimited, or answered by its failure mode): tenant and tier `envoy:<domain>` (no tenant slug
 *   or tier name has a `:`, so they never mix with a tenant's), operation the rule's label (its
 *   `name`, else its configured path), outcome allowed / denied / shadow_denied / degraded (a
 *   failure mode's answer; `closed` is denied), a 429 by the rule as the limit that denied it.
 *   A descriptor no rule applies to, or whose rule another `replaces`, is no decision.
 * - /metrics: `sluice_envoy_decisions_total{domain, rule, outcome}` per descriptor, every outcome
 *   (`no_rule` and `replaced` too), labels from the policy only: a domain the policy does not know
 *   is counted once per call as domain `_unknown`, outcome `unknown_domain` (a client chooses
 *   the domain, and its values must not become label values); and the call's latency in
 *   `sluice_decision_duration_seconds` (allowed when OK overall, else denied).
 */
import { Counter } from "prom-client";
import type { EnvoyCount, EnvoyOutcome, EnvoyPlan, EnvoyResponse } from "../policy/envoy/decide";
import { envoyOutcomes } from "../policy/envoy/decide";
import type { DecisionMetrics } from "../decision/metrics";
import type { UsageOutcome, UsageSink } from "../decision/ports";

/** The tenant (and tier) of an Envoy domain's decisions in usage. */
export const envoyUsageTenant = (domain: string) => `envoy:${domain}`;
export const UNKNOWN_DOMAIN_LABEL = "_unknown";

/** What one call of the decider (./engine.ts) came to: the response, and what its accounting needs. */
export interface EnvoyDecided {
  plan: EnvoyPlan;
  response: EnvoyResponse;
  counts: (EnvoyCount | null)[];
  /** Descriptors answered without the store (by their failure mode), by index. */
  degraded: ReadonlySet<number>;
  /** The store's clock at the decision (ms). */
  nowMs: number;
  latencyMs: number;
}

type Labelled = EnvoyOutcome | "unknown_domain";

export class EnvoyAccounting {
  private readonly decisions: Counter<"domain" | "rule" | "outcome"> | null;

  constructor(
    private readonly metrics: DecisionMetrics | null,
    private readonly usage: UsageSink | null,
  ) {
    this.decisions = metrics
      ? new Counter({
          name: "sluice_envoy_decisions_total",
          help: "rateLimitService decisions per descriptor, by domain, rule (its name, else its configured path) and outcome.",
          labelNames: ["domain", "rule", "outcome"],
          registers: [metrics.registry],
        })
      : null;
  }

  record(decided: EnvoyDecided): void {
    const { plan, counts, degraded } = decided;
    this.metrics?.latency.series(decided.response.overall_code === "OK" ? "allowed" : "denied").observe(decided.latencyMs / 1000);
    if (!plan.known) {
      this.count(UNKNOWN_DOMAIN_LABEL, "", "unknown_domain");
      return;
    }
    const outcomes = envoyOutcomes(plan, counts);
    const tenant = envoyUsageTenant(plan.domain);
    plan.descriptors.forEach((p, i) => {
      const outcome = outcomes[i]!;
      this.count(plan.domain, p.kind === "none" ? "" : p.label, outcome);
      if (!this.usage || (p.kind !== "limit" && p.kind !== "unlimited")) return;
      const used = usageOutcome(outcome, degraded.has(i));
      if (used === null) return;
      const hits = p.kind === "limit" ? p.hits : 1;
      this.usage.record({
        atMs: decided.nowMs,
        tenant,
        tier: tenant,
        operation: p.label,
        outcome: used,
        keyPrefix: null,
        latencyMs: decided.latencyMs,
        deniedQuota: null,
        deniedLimit: outcome === "denied" ? p.label : null,
        accuracy: undefined,
        units: used !== "denied" && hits !== 1 ? hits : undefined,
      });
    });
  }

  /** The counter's children by their labels, so a call does not build a label set per descriptor (bounded: the policy's rules × outcomes, dropped whole past 10,000). */
  private readonly children = new Map<string, { inc(): void }>();
  private count(domain: string, rule: string, outcome: Labelled): void {
    if (!this.decisions) return;
    const id = `${domain}\u0000${rule}\u0000${outcome}`;
    let child = this.children.get(id);
    if (!child) {
      if (this.children.size >= 10_000) this.children.clear();
      this.children.set(id, (child = this.decisions.labels({ domain, rule, outcome })));
    }
    child.inc();
  }
}

/** A descriptor's outcome as usage counts it; null: no decision (nothing applied). */
function usageOutcome(outcome: EnvoyOutcome, withoutStore: boolean): UsageOutcome | null {
  switch (outcome) {
    case "allowed":
    case "unlimited":
      // Failure mode `local`: passed on the in-process count, as the engine counts it.
      return withoutStore ? "degraded" : "allowed";
    case "denied":
    case "unavailable":
      return "denied";
    case "shadow_denied":
      return "shadow_denied";
    case "degraded":
      return "degraded";
    case "no_rule":
    case "replaced":
      return null;
  }
}
