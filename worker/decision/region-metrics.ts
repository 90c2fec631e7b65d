/**
 * `sluice_region_share_ratio{limit}`: for each `split` limit and global cap (docs/regions.md), the
 * fraction of the published limit this region's decision servers enforce now: 1 without a shares
 * document (one region), its share once the worker has re-balanced. Computed when /metrics is read,
 * from the published document and the one in force. Labels are limit names from the policy
 * (`free-tenant`, `global-orders`), never a tenant or key. The `region` label comes with every
 * series (SLUICE_REGION, worker/decision/server.ts).
 */
import { Gauge, type Registry } from "prom-client";
import type { CompiledPolicy } from "../../lib/policy/compiled";

export function registerRegionShareMetric(registry: Registry, published: () => CompiledPolicy | null, inForce: () => CompiledPolicy | null): void {
  const gauge: Gauge<"limit"> = new Gauge({
    name: "sluice_region_share_ratio",
    help: "Split limits (regions: split): the fraction of the limit this region enforces now.",
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
          if (l.regions === "split" && enforced) gauge.set({ limit: l.name }, enforced.limit / l.limit);
        });
      }
      doc.globalCaps.forEach((g, i) => {
        const enforced = now.globalCaps[i];
        if (g.regions === "split" && enforced) gauge.set({ limit: `global-${g.operation}` }, enforced.limit / g.limit);
      });
    },
  });
}
