/**
 * Reads for the tenants pages. The list is paginated with offset/limit over indexed columns
 * (slug is unique, tierId and status are indexed), so it stays fast at 10,000+ tenants.
 * Everything tenant-owned is looked up with the tenant in the `where`.
 */
import { z } from "zod";
import type { PrismaClient } from "../generated/prisma/client";
import { TENANT_STATUSES } from "../policy/types";

export const TENANT_SORTS = ["slug", "name", "tier", "status", "createdAt"] as const;
export type TenantSort = (typeof TENANT_SORTS)[number];

export const tenantListQuerySchema = z.object({
  q: z.string().trim().max(100).optional().catch(undefined),
  tier: z.string().max(63).optional().catch(undefined),
  status: z.enum(TENANT_STATUSES).optional().catch(undefined),
  sort: z.enum(TENANT_SORTS).default("slug").catch("slug"),
  dir: z.enum(["asc", "desc"]).default("asc").catch("asc"),
  page: z.coerce.number().int().min(1).max(100_000).default(1).catch(1),
  pageSize: z.coerce.number().int().min(10).max(200).default(50).catch(50),
});
export type TenantListQuery = z.output<typeof tenantListQuerySchema>;

export interface TenantRow {
  slug: string;
  name: string;
  tier: string;
  status: string;
  createdAt: Date;
  activeKeys: number;
}

export async function listTenants(db: PrismaClient, query: TenantListQuery): Promise<{ rows: TenantRow[]; total: number }> {
  const where = {
    ...(query.q ? { OR: [{ slug: { contains: query.q.toLowerCase() } }, { name: { contains: query.q, mode: "insensitive" as const } }] } : {}),
    ...(query.tier ? { tier: { name: query.tier } } : {}),
    ...(query.status ? { status: query.status } : {}),
  };
  const orderBy =
    query.sort === "tier"
      ? [{ tier: { name: query.dir } }, { slug: "asc" as const }]
      : query.sort === "slug"
        ? [{ slug: query.dir }]
        : [{ [query.sort]: query.dir }, { slug: "asc" as const }];
  const [rows, total] = await Promise.all([
    db.tenant.findMany({
      where,
      orderBy,
      skip: (query.page - 1) * query.pageSize,
      take: query.pageSize,
      select: {
        slug: true,
        name: true,
        status: true,
        createdAt: true,
        tier: { select: { name: true } },
        _count: { select: { apiKeys: { where: { revokedAt: null } } } },
      },
    }),
    db.tenant.count({ where }),
  ]);
  return {
    rows: rows.map((r) => ({ slug: r.slug, name: r.name, tier: r.tier.name, status: r.status, createdAt: r.createdAt, activeKeys: r._count.apiKeys })),
    total,
  };
}

export interface TenantDetail {
  id: string;
  slug: string;
  name: string;
  tier: string;
  status: string;
  /** The draft's billing (null: the UTC calendar month) and own notification thresholds (null: the tier's). */
  billing: { anchor: string; timeZone: string } | null;
  thresholds: number[] | null;
  createdAt: Date;
  updatedAt: Date;
  overrides: {
    id: string;
    operation: string;
    scope: string | null;
    period: string | null;
    limit: number;
    algorithm: string | null;
    windowMs: number | null;
    burst: number | null;
    overage: string | null;
    expiresAt: Date | null;
  }[];
  keys: { id: string; name: string; prefix: string; createdAt: Date; revokedAt: Date | null; expiresAt: Date | null }[];
}

export async function getTenantDetail(db: PrismaClient, slug: string): Promise<TenantDetail | null> {
  const tenant = await db.tenant.findUnique({ where: { slug }, include: { tier: { select: { name: true } } } });
  if (!tenant) return null;
  const [overrides, keys] = await Promise.all([
    db.tenantOverride.findMany({ where: { tenantId: tenant.id }, orderBy: [{ position: "asc" }, { operation: "asc" }] }),
    db.apiKey.findMany({
      where: { tenantId: tenant.id },
      orderBy: [{ revokedAt: { sort: "desc", nulls: "first" } }, { createdAt: "desc" }],
      select: { id: true, name: true, prefix: true, createdAt: true, revokedAt: true, expiresAt: true },
    }),
  ]);
  return {
    id: tenant.id,
    slug: tenant.slug,
    name: tenant.name,
    tier: tenant.tier.name,
    status: tenant.status,
    billing: tenant.billingAnchor && tenant.billingTimeZone ? { anchor: tenant.billingAnchor, timeZone: tenant.billingTimeZone } : null,
    thresholds: Array.isArray(tenant.thresholds) ? (tenant.thresholds as number[]) : null,
    createdAt: tenant.createdAt,
    updatedAt: tenant.updatedAt,
    overrides: overrides.map((o) => ({
      id: o.id,
      operation: o.operation,
      scope: o.scope,
      period: o.period,
      limit: Number(o.limit),
      algorithm: o.algorithm,
      windowMs: o.windowMs,
      burst: o.burst,
      overage: o.overage,
      expiresAt: o.expiresAt,
    })),
    keys,
  };
}

export async function listTierNames(db: PrismaClient): Promise<string[]> {
  const tiers = await db.tier.findMany({ orderBy: [{ position: "asc" }, { name: "asc" }], select: { name: true } });
  return tiers.map((t) => t.name);
}

export async function listTenantSlugs(db: PrismaClient, take = 500): Promise<{ slug: string; tier: string }[]> {
  const rows = await db.tenant.findMany({ orderBy: { slug: "asc" }, take, select: { slug: true, tier: { select: { name: true } } } });
  return rows.map((r) => ({ slug: r.slug, tier: r.tier.name }));
}
