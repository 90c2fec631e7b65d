/** Move a tenant to another tier (draft: live after the next publish). */
import type { PrismaClient } from "../generated/prisma/client";
import { writeAudit } from "../db/audit";
import { findTenantBySlug } from "../db/policy-repo";
import { ServiceError } from "./errors";

export async function setTenantTier(
  db: PrismaClient,
  input: { tenant: string; tier: string },
  actor: string,
): Promise<{ tenant: string; tier: string; changed: boolean }> {
  return db.$transaction(async (tx) => {
    const tenant = await findTenantBySlug(tx, input.tenant);
    if (!tenant) throw new ServiceError("not_found", `no tenant ${JSON.stringify(input.tenant)}`, { field: "tenant" });
    const tier = await tx.tier.findUnique({ where: { name: input.tier } });
    if (!tier) throw new ServiceError("invalid_request", `tier: unknown tier ${JSON.stringify(input.tier)}`, { field: "tier" });
    if (tier.id === tenant.tierId) return { tenant: tenant.slug, tier: tier.name, changed: false };
    await tx.tenant.update({ where: { id: tenant.id }, data: { tierId: tier.id } });
    await writeAudit(tx, {
      actor, action: "tenant.update", entity: "tenant", entityId: tenant.id,
      before: { slug: tenant.slug, tier: tenant.tier.name }, after: { slug: tenant.slug, tier: tier.name },
    });
    return { tenant: tenant.slug, tier: tier.name, changed: true };
  });
}
