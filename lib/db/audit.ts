/**
 * The audit log: who changed what, before and after. Always written with the transaction client of
 * the change itself, so a change and its audit entry commit (or roll back) together.
 */
import type { Prisma } from "../generated/prisma/client";
import type { Tx } from "./client";

/** A JSON value as stored in AuditEntry.before / after. */
export type AuditJson = string | number | boolean | null | AuditJson[] | { [key: string]: AuditJson };

export interface AuditInput {
  /** `user:<email>`, `cli:<os user>`, `token:<prefix>`. */
  actor: string;
  /** `<entity>.<verb>`: `limit.create`, `tenant.update`, `policy.publish`, `api_key.revoke`. */
  action: string;
  entity: string;
  entityId?: string | null;
  before?: AuditJson | null;
  after?: AuditJson | null;
}

/** Converts a value to plain JSON (dates → ISO strings, bigints → numbers, undefined dropped). */
export function toAuditJson(value: unknown): AuditJson {
  return JSON.parse(
    JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? Number(v) : v)) ?? "null",
  ) as AuditJson;
}

export async function writeAudit(tx: Tx, entry: AuditInput): Promise<void> {
  await tx.auditEntry.create({ data: auditRow(entry) });
}

/** Many entries in one statement (an apply can change hundreds of rows). */
export async function writeAuditMany(tx: Tx, entries: AuditInput[]): Promise<void> {
  if (entries.length === 0) return;
  await tx.auditEntry.createMany({ data: entries.map(auditRow) });
}

function json(value: AuditJson | null | undefined): Prisma.InputJsonValue | undefined {
  if (value === null || value === undefined) return undefined;
  const plain = toAuditJson(value);
  return plain === null ? undefined : (plain as Prisma.InputJsonValue);
}

function auditRow(entry: AuditInput): Prisma.AuditEntryCreateManyInput {
  return {
    actor: entry.actor,
    action: entry.action,
    entity: entry.entity,
    entityId: entry.entityId ?? null,
    // Prisma wants a JSON input or undefined for "SQL NULL" on nullable Json columns.
    before: json(entry.before),
    after: json(entry.after),
  };
}
