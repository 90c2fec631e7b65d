/** Delete one tenant override (draft: live after the next publish). */
import type { PrismaClient } from "../generated/prisma/client";
import { writeAudit } from "../db/audit";
import { findTenantBySlug, overrideRowToSpec } from "../db/policy-repo";
import { ServiceError } from "./errors";

export async function deleteTenantOverride(
  db: PrismaClient,
  input: { tenant: string; id: string },
  actor: string,
): Promise<{ id: string }> {
  return db.$transaction(async (tx) => {
    const tenant = await findTenantBySlug(tx, input.tenant);
    if (!tenant) throw new ServiceError("not_found", `no tenant ${JSON.stringify(input.tenant)}`, { field: "tenant" });
    // Tenant in the where: another tenant's override id answers 404, like a missing one.
    const existing = await tx.tenantOverride.findFirst({ where: { id: input.id, tenantId: tenant.id } });
    if (!existing) throw new ServiceError("not_found", "no such override for this tenant", { field: "id" });
    await tx.tenantOverride.deleteMany({ where: { id: existing.id, tenantId: tenant.id } });
    await writeAudit(tx, {
      actor, action: "override.delete", entity: "override", entityId: existing.id,
      before: { tenant: tenant.slug, ...overrideRowToSpec(existing) }, after: null,
    });
    return { id: existing.id };
  });
}
