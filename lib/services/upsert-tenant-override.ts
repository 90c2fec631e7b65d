/**
 * Create or replace one tenant override (draft: live after the next publish). The override is
 * validated with the policy file's own schema, and then the whole draft must still compile (an
 * override with no window to inherit is refused here, not at publish time).
 */
import type { PrismaClient } from "../generated/prisma/client";
import { writeAudit } from "../db/audit";
import { findTenantBySlug, loadPolicyRows, newId, overrideRowToSpec, rowsToSpec } from "../db/policy-repo";
import { checkPolicySpec, compilePolicy, PolicyCompileError } from "../policy/compile";
import { parseDurationMs } from "../policy/duration";
import { issuesFromZod, overrideSchema, type OverrideSpec } from "../policy/policy-file";
import { invalidPolicy, ServiceError } from "./errors";

export async function upsertTenantOverride(
  db: PrismaClient,
  input: { tenant: string; id?: string; override: unknown },
  actor: string,
): Promise<{ id: string; created: boolean; override: OverrideSpec }> {
  const parsed = overrideSchema.safeParse(input.override);
  if (!parsed.success) throw invalidPolicy(issuesFromZod(parsed.error));
  const o = parsed.data;
  return db.$transaction(async (tx) => {
    const tenant = await findTenantBySlug(tx, input.tenant);
    if (!tenant) throw new ServiceError("not_found", `no tenant ${JSON.stringify(input.tenant)}`, { field: "tenant" });
    const existing = input.id
      ? await tx.tenantOverride.findFirst({ where: { id: input.id, tenantId: tenant.id } })
      : null;
    if (input.id && !existing) throw new ServiceError("not_found", "no such override for this tenant", { field: "id" });
    const data = {
      operation: o.operation,
      scope: o.scope ?? null,
      period: o.period ?? null,
      limit: BigInt(o.limit),
      algorithm: o.algorithm ?? null,
      windowMs: o.window === undefined ? null : parseDurationMs(o.window),
      burst: o.burst ?? null,
      overage: o.overage ?? null,
      expiresAt: o.expiresAt === undefined ? null : new Date(o.expiresAt),
    };
    const id = existing?.id ?? newId("override");
    if (existing) {
      await tx.tenantOverride.updateMany({ where: { id, tenantId: tenant.id }, data });
    } else {
      const position = await tx.tenantOverride.count({ where: { tenantId: tenant.id } });
      await tx.tenantOverride.create({ data: { id, tenantId: tenant.id, position, ...data } });
    }
    // The draft must still compile with this override in it.
    const spec = rowsToSpec(await loadPolicyRows(tx));
    const checked = checkPolicySpec(spec);
    if (!checked.ok) throw invalidPolicy(checked.issues);
    try {
      compilePolicy(spec);
    } catch (error) {
      if (error instanceof PolicyCompileError) throw invalidPolicy(error.issues);
      throw error;
    }
    await writeAudit(tx, {
      actor,
      action: existing ? "override.update" : "override.create",
      entity: "override",
      entityId: id,
      before: existing ? { tenant: tenant.slug, ...overrideRowToSpec(existing) } : null,
      after: { tenant: tenant.slug, ...o },
    });
    return { id, created: !existing, override: o };
  });
}
