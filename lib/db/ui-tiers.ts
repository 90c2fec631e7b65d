/** Reads for the tiers page (the limit matrix) and the operations page: the draft rows in Postgres. */
import type { PrismaClient } from "../generated/prisma/client";

export async function readTierMatrix(db: PrismaClient) {
  const [tiers, operations, globalCaps, tenantCounts] = await Promise.all([
    db.tier.findMany({
      orderBy: [{ position: "asc" }, { name: "asc" }],
      include: { limits: { orderBy: [{ position: "asc" }] }, quotas: { orderBy: [{ position: "asc" }] } },
    }),
    db.operation.findMany({ orderBy: [{ position: "asc" }, { name: "asc" }] }),
    db.globalCap.findMany({ orderBy: [{ position: "asc" }] }),
    db.tenant.groupBy({ by: ["tierId"], _count: { _all: true } }),
  ]);
  const counts = new Map(tenantCounts.map((c) => [c.tierId, c._count._all]));
  return {
    tiers: tiers.map((t) => ({
      name: t.name,
      weight: t.weight,
      tenants: counts.get(t.id) ?? 0,
      limits: t.limits.map((l) => ({
        operation: l.operation,
        scope: l.scope,
        algorithm: l.algorithm,
        limit: l.limit,
        windowMs: l.windowMs,
        burst: l.burst,
        precision: l.precision,
        mode: l.mode,
        maxDelayMs: l.maxDelayMs,
        leaseTtlMs: l.leaseTtlMs,
      })),
      quotas: t.quotas.map((q) => ({ operation: q.operation, period: q.period, limit: Number(q.limit), overage: q.overage })),
    })),
    operations: operations.map((o) => ({ name: o.name, match: o.match, cost: o.cost, failureMode: o.failureMode })),
    globalCaps: globalCaps.map((g) => ({ operation: g.operation, limit: g.limit, windowMs: g.windowMs, share: g.share })),
  };
}
export type TierMatrixData = Awaited<ReturnType<typeof readTierMatrix>>;
