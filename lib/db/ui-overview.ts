/** Reads for the overview page: counts, the live version, the latest changes. */
import type { PrismaClient } from "../generated/prisma/client";

export interface OverviewData {
  counts: { tenants: number; suspended: number; tiers: number; operations: number; activeKeys: number; users: number };
  live: { version: number; author: string; createdAt: Date; checksum: string; note: string | null } | null;
  recent: { id: string; at: Date; actor: string; action: string; entity: string; entityId: string | null }[];
}

export async function readOverview(db: PrismaClient): Promise<OverviewData> {
  const [tenants, suspended, tiers, operations, activeKeys, users, live, recent] = await Promise.all([
    db.tenant.count(),
    db.tenant.count({ where: { status: "suspended" } }),
    db.tier.count(),
    db.operation.count(),
    db.apiKey.count({ where: { revokedAt: null } }),
    db.user.count({ where: { disabledAt: null } }),
    db.policyVersion.findFirst({ orderBy: { version: "desc" }, select: { version: true, author: true, createdAt: true, checksum: true, note: true } }),
    db.auditEntry.findMany({ orderBy: { at: "desc" }, take: 8, select: { id: true, at: true, actor: true, action: true, entity: true, entityId: true } }),
  ]);
  return {
    counts: { tenants, suspended, tiers, operations, activeKeys, users },
    live,
    recent: recent.map((r) => ({ ...r, id: r.id.toString() })),
  };
}
