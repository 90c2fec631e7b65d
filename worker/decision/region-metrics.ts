/**
 * `sluice_region_share_ratio{limit}`: for each `split` and `shared` limit and global cap
 * (docs/regions.md), the fraction of the published limit this region's decision servers enforce
 * now: for a split one 1 without a shares document (one region), its share once the worker has
 * re-balanced; for a shared one 1 while the replication link works and every other region is heard
 * from, its last share while degraded, 1 − the silent regions' last shares while some are silent.
 * Computed when /metrics is read,
 * from the published document and the one in force. Labels are limit names from the policy
 * (`free-tenant`, `global-orders`), never a tenant or key. The `region` label comes with every
 * series (SLUICE_REGION, worker/decision/server.ts).
 */
import { Gauge, type Registry } from "prom-client";
import type { CompiledPolicy } from "../../lib/policy/compiled";

export function registerRegionShareMetric(registry: Registry, published: () => CompiledPolicy | null, inForce: () => CompiledPolicy | null): void {
  const gauge: Gauge<"limit"> = new Gauge({
    name: "sluice_region_share_ratio",
    help: "Split and shared limits (regions: split | shared): the fraction of the limit this region enforces now (a shared one: 1, its last share while the replication link is degraded, or 1 minus the last shares of regions silent too long).",
    labelNames: ["limit"],
    registers: [registry],
    collect() {
      gauge.reset();
      const doc = published();
      const now = inForce();
      if (!doc || !now) return;
      for (const [tierName, tier] of Object.entries(doc.tiers)) {
        tier.limits.forEach((l, i) => {
          const enforced = now.tiers[tierName]?.limits[i];
          if ((l.regions === "split" || l.regions === "shared") && enforced) gauge.set({ limit: l.name }, enforced.limit / l.limit);
        });
      }
      doc.globalCaps.forEach((g, i) => {
        const enforced = now.globalCaps[i];
        if ((g.regions === "split" || g.regions === "shared") && enforced) gauge.set({ limit: `global-${g.operation}` }, enforced.limit / g.limit);
      });
    },
  });
}
