/**
 * Every tenant override of the draft, for the Tenants page's list: soonest expiry first (expired
 * ones first of all, so what needs attention is on top), those without expiry last. Bounded: the
 * policy file allows 100 per tenant; the page shows the first `take`.
 */
import type { PrismaClient } from "../generated/prisma/client";

export interface OverrideListRow {
  id: string;
  tenant: string;
  operation: string;
  /** `api_key`, `tenant`, … for a limit; null for a quota. */
  scope: string | null;
  /** `month` or `day` for a quota; null for a limit. */
  period: string | null;
  limit: number;
  algorithm: string | null;
  windowMs: number | null;
  expiresAt: Date | null;
}

/** `asOfMs`: the time the list was read, which "expired" and "expires in" are said against. */
export async function listAllOverrides(db: PrismaClient, take = 500): Promise<{ rows: OverrideListRow[]; total: number; asOfMs: number }> {
  const [rows, total] = await Promise.all([
    db.tenantOverride.findMany({
      orderBy: [{ expiresAt: { sort: "asc", nulls: "last" } }, { tenant: { slug: "asc" } }, { position: "asc" }],
      take,
      select: { id: true, operation: true, scope: true, period: true, limit: true, algorithm: true, windowMs: true, expiresAt: true, tenant: { select: { slug: true } } },
    }),
    db.tenantOverride.count(),
  ]);
  return { rows: rows.map((r) => ({ ...r, tenant: r.tenant.slug, limit: Number(r.limit) })), total, asOfMs: Date.now() };
}
