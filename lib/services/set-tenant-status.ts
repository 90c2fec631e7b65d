/**
 * Suspend or reactivate a tenant (draft: live after the next publish). A suspended tenant's keys
 * stay in the key index, so its clients get 403 tenant_suspended rather than 401 unknown_key.
 */
import type { PrismaClient } from "../generated/prisma/client";
import { writeAudit } from "../db/audit";
import { findTenantBySlug } from "../db/policy-repo";
import { TENANT_STATUSES, type TenantStatus } from "../policy/types";
import { ServiceError } from "./errors";

export async function setTenantStatus(
  db: PrismaClient,
  input: { tenant: string; status: TenantStatus },
  actor: string,
): Promise<{ tenant: string; status: TenantStatus; changed: boolean }> {
  if (!(TENANT_STATUSES as readonly string[]).includes(input.status)) {
    throw new ServiceError("invalid_request", `status: expected one of ${TENANT_STATUSES.join(", ")}`, { field: "status" });
  }
  return db.$transaction(async (tx) => {
    const tenant = await findTenantBySlug(tx, input.tenant);
    if (!tenant) throw new ServiceError("not_found", `no tenant ${JSON.stringify(input.tenant)}`, { field: "tenant" });
    if (tenant.status === input.status) return { tenant: tenant.slug, status: input.status, changed: false };
    await tx.tenant.update({ where: { id: tenant.id }, data: { status: input.status } });
    await writeAudit(tx, {
      actor, action: "tenant.update", entity: "tenant", entityId: tenant.id,
      before: { slug: tenant.slug, status: tenant.status }, after: { slug: tenant.slug, status: input.status },
    });
    return { tenant: tenant.slug, status: input.status, changed: true };
  });
}
