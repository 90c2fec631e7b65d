/**
 * The audit log as people read it: each entry's entity by name (a tenant's slug, a user's email, a
 * limit's tier · operation · scope, a policy version), and only the fields the change touched,
 * before → after, instead of ids and whole records. Also the log's free-text search.
 */
import type { Db } from "../../db/client";

export interface FieldChange {
  field: string;
  /** undefined: the field did not exist before (a creation) / after (a deletion). */
  before?: unknown;
  after?: unknown;
}

export interface AuditEntryLike {
  entity: string;
  entityId: string | null;
  before: unknown;
  after: unknown;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The fields that differ between two records (every field of a created or deleted one), in a stable order. */
export function auditDiff(before: unknown, after: unknown): FieldChange[] {
  if (!isRecord(before) && !isRecord(after)) return same(before, after) ? [] : [{ field: "value", before: before ?? undefined, after: after ?? undefined }];
  const b = isRecord(before) ? before : {};
  const a = isRecord(after) ? after : {};
  const fields = [...new Set([...Object.keys(b), ...Object.keys(a)])];
  const out: FieldChange[] = [];
  for (const field of fields) {
    const inB = isRecord(before) && field in b;
    const inA = isRecord(after) && field in a;
    if (inB && inA && same(b[field], a[field])) continue;
    out.push({ field, ...(inB ? { before: b[field] } : {}), ...(inA ? { after: a[field] } : {}) });
  }
  return out;
}

const str = (v: unknown) => (typeof v === "string" || typeof v === "number" ? String(v) : undefined);

/** A name for the entity from its own record (what the policy's natural keys are), or null. */
export function nameFromRecord(entity: string, entityId: string | null, record: unknown): string | null {
  if (entity === "policy") return entityId ? `v${entityId}` : null;
  if (!isRecord(record)) return null;
  const r = record;
  switch (entity) {
    case "tenant":
      return str(r.slug) ?? null;
    case "tier":
    case "operation":
      return str(r.name) ?? null;
    case "limit":
      return [str(r.tier), str(r.operation), str(r.scope), str(r.algorithm)].filter(Boolean).join(" · ") || null;
    case "quota":
      return [str(r.tier), str(r.operation), str(r.period)].filter(Boolean).join(" · ") || null;
    case "override":
      return [str(r.tenant), str(r.operation), str(r.scope) ?? str(r.period)].filter(Boolean).join(" · ") || null;
    case "key":
      return [str(r.tenant), str(r.name)].filter(Boolean).join(" · ") || null;
    case "globalCap":
      return str(r.operation) ?? null;
    default:
      return str(r.email) ?? str(r.slug) ?? str(r.name) ?? null;
  }
}

/** Names for a page of entries: from their records, else looked up (users by id → email, tokens → name, tenants → slug). */
export async function entityNames(db: Db, rows: readonly AuditEntryLike[]): Promise<string[]> {
  const ids = (entity: string) => [...new Set(rows.filter((r) => r.entity === entity && r.entityId).map((r) => r.entityId!))];
  const [users, tokens, tenants] = await Promise.all([
    ids("user").length ? db.user.findMany({ where: { id: { in: ids("user") } }, select: { id: true, email: true } }) : [],
    ids("token").length ? db.apiToken.findMany({ where: { id: { in: ids("token") } }, select: { id: true, name: true, kind: true } }) : [],
    ids("tenant").length ? db.tenant.findMany({ where: { id: { in: ids("tenant") } }, select: { id: true, slug: true } }) : [],
  ]);
  return rows.map((r) => {
    const own = nameFromRecord(r.entity, r.entityId, r.after) ?? nameFromRecord(r.entity, r.entityId, r.before);
    if (own) return own;
    if (r.entity === "user") return users.find((u) => u.id === r.entityId)?.email ?? r.entityId ?? "—";
    if (r.entity === "token") {
      const t = tokens.find((x) => x.id === r.entityId);
      return t ? `${t.kind} token ${t.name}` : (r.entityId ?? "—");
    }
    if (r.entity === "tenant") return tenants.find((t) => t.id === r.entityId)?.slug ?? r.entityId ?? "—";
    return r.entityId ?? "—";
  });
}

/**
 * The entity ids a free-text search names (users by email, tenants by slug or name, tiers by name,
 * tokens by name or prefix, so every entry about a token is found, its revocation too)
 * and the entries whose records mention it, for listAuditEntries' `q`.
 */
export async function auditSearchTargets(db: Db, q: string): Promise<{ entityIds: string[]; entryIds: bigint[] }> {
  const like = { contains: q, mode: "insensitive" as const };
  const [users, tenants, tiers, tokens, entries] = await Promise.all([
    db.user.findMany({ where: { OR: [{ email: like }, { name: like }] }, select: { id: true }, take: 200 }),
    db.tenant.findMany({ where: { OR: [{ slug: like }, { name: like }] }, select: { id: true }, take: 200 }),
    db.tier.findMany({ where: { name: like }, select: { id: true }, take: 200 }),
    db.apiToken.findMany({ where: { OR: [{ name: like }, { prefix: like }] }, select: { id: true }, take: 200 }),
    db.$queryRawUnsafe<{ id: bigint }[]>(
      `SELECT "id" FROM "AuditEntry" WHERE "after"::text ILIKE $1 OR "before"::text ILIKE $1 ORDER BY "at" DESC LIMIT 2000`,
      `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`,
    ),
  ]);
  return { entityIds: [...users, ...tenants, ...tiers, ...tokens].map((x) => x.id), entryIds: entries.map((e) => e.id) };
}
