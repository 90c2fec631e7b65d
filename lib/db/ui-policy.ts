/** Reads for the policy page, the simulator and the audit log. */
import { z } from "zod";
import type { PrismaClient } from "../generated/prisma/client";

export interface VersionRow {
  version: number;
  author: string;
  createdAt: Date;
  checksum: string;
  note: string | null;
  rolledBackFrom: number | null;
}

export async function listPolicyVersions(db: PrismaClient, take = 50): Promise<VersionRow[]> {
  return db.policyVersion.findMany({
    orderBy: { version: "desc" },
    take,
    select: { version: true, author: true, createdAt: true, checksum: true, note: true, rolledBackFrom: true },
  });
}

/** The compiled document of the live (latest) version, as stored; null before the first publish. */
export async function readLivePolicyDocument(db: PrismaClient): Promise<{ version: number; document: unknown } | null> {
  const row = await db.policyVersion.findFirst({ orderBy: { version: "desc" }, select: { version: true, document: true } });
  return row ? { version: row.version, document: row.document } : null;
}

/** Columns the audit log sorts by, in the database (the log is paged: a sort covers all of it). */
export const AUDIT_SORTS = ["at", "actor", "action", "entity"] as const;
export type AuditSort = (typeof AUDIT_SORTS)[number];
/** Newest first unless the URL asks otherwise. */
export const AUDIT_DEFAULT_SORT = { sort: "at", dir: "desc" } as const;

// An unknown column or direction in the URL falls back to the default order instead of failing.
export const auditQuerySchema = z.object({
  /** Free text: actor, action, entity, the names of users, tenants and tiers, and the records' contents. */
  q: z.string().trim().min(1).max(200).optional().catch(undefined),
  actor: z.string().trim().max(320).optional().catch(undefined),
  entity: z.string().trim().max(64).optional().catch(undefined),
  from: z.iso.date().optional().catch(undefined),
  to: z.iso.date().optional().catch(undefined),
  sort: z.enum(AUDIT_SORTS).default(AUDIT_DEFAULT_SORT.sort).catch(AUDIT_DEFAULT_SORT.sort),
  dir: z.enum(["asc", "desc"]).default(AUDIT_DEFAULT_SORT.dir).catch(AUDIT_DEFAULT_SORT.dir),
  page: z.coerce.number().int().min(1).max(10_000).default(1).catch(1),
});
export type AuditQuery = z.output<typeof auditQuerySchema>;

export interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  action: string;
  entity: string;
  entityId: string | null;
  before: unknown;
  after: unknown;
}

export const AUDIT_PAGE_SIZE = 50;

export async function listAuditEntries(
  db: PrismaClient,
  query: AuditQuery,
  /** What `query.q` names (lib/services/observe/audit-view.ts auditSearchTargets). */
  targets: { entityIds: string[]; entryIds: bigint[] } = { entityIds: [], entryIds: [] },
): Promise<{ rows: AuditRow[]; total: number }> {
  const at: { gte?: Date; lt?: Date } = {};
  if (query.from) at.gte = new Date(`${query.from}T00:00:00Z`);
  if (query.to) at.lt = new Date(new Date(`${query.to}T00:00:00Z`).getTime() + 86_400_000);
  const where = {
    ...(query.actor ? { actor: { contains: query.actor, mode: "insensitive" as const } } : {}),
    ...(query.entity ? { entity: query.entity } : {}),
    ...(at.gte || at.lt ? { at } : {}),
    ...(query.q
      ? {
          OR: [
            { actor: { contains: query.q, mode: "insensitive" as const } },
            { action: { contains: query.q, mode: "insensitive" as const } },
            { entity: { contains: query.q, mode: "insensitive" as const } },
            { entityId: query.q },
            ...(targets.entityIds.length ? [{ entityId: { in: targets.entityIds } }] : []),
            ...(targets.entryIds.length ? [{ id: { in: targets.entryIds } }] : []),
          ],
        }
      : {}),
  };
  // Ties (one actor, one apply's many entries at one instant) break by time, newest first, then
  // by id, so the order is total and paging never repeats or skips an entry. (actor, at) and
  // (entity, at) are indexed.
  const orderBy =
    query.sort === "at"
      ? [{ at: query.dir }, { id: query.dir }]
      : [{ [query.sort]: query.dir }, { at: "desc" as const }, { id: "desc" as const }];
  const [rows, total] = await Promise.all([
    db.auditEntry.findMany({ where, orderBy, skip: (query.page - 1) * AUDIT_PAGE_SIZE, take: AUDIT_PAGE_SIZE }),
    db.auditEntry.count({ where }),
  ]);
  return { rows: rows.map((r) => ({ ...r, id: r.id.toString() })), total };
}

export async function listAuditEntities(db: PrismaClient): Promise<string[]> {
  const rows = await db.auditEntry.findMany({ distinct: ["entity"], select: { entity: true }, orderBy: { entity: "asc" } });
  return rows.map((r) => r.entity);
}
