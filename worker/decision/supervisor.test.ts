import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { aggregateMetrics } from "./supervisor";

function processRegistry(decisions: number, version: number, latencies: number[]): Registry {
  const registry = new Registry();
  new Counter({ name: "sluice_decisions_total", help: "d", labelNames: ["outcome"], registers: [registry] }).inc({ outcome: "allowed" }, decisions);
  new Gauge({ name: "sluice_policy_version", help: "v", registers: [registry] }).set(version);
  const h = new Histogram({ name: "sluice_decision_duration_seconds", help: "h", buckets: [0.001, 0.01], registers: [registry] });
  for (const l of latencies) h.observe(l);
  return registry;
}

describe("aggregateMetrics (one /metrics view of several decision processes)", () => {
  it("sums counters and histograms, and takes the maximum of Sluice's gauges", async () => {
    const parts = await Promise.all([processRegistry(7, 3, [0.0005, 0.005]), processRegistry(5, 4, [0.05])].map((r) => r.getMetricsAsJSON()));
    const text = await aggregateMetrics(parts).metrics();
    expect(text).toMatch(/^sluice_decisions_total\{outcome="allowed"\} 12$/m);
    expect(text).toMatch(/^sluice_policy_version 4$/m);
    expect(text).toMatch(/^sluice_decision_duration_seconds_count 3$/m);
    expect(text).toMatch(/^sluice_decision_duration_seconds_bucket\{le="0.001"\} 1$/m);
    expect(text).toMatch(/^sluice_decision_duration_seconds_bucket\{le="\+Inf"\} 3$/m);
  });
});
