/**
 * Suspend or reactivate a tenant (draft: live after the next publish). A suspended tenant's keys
 * stay in the key index, so its clients get 403 tenant_suspended rather than 401 unknown_key.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { TENANT_STATUSES, type TenantStatus } from "../../policy/types";
import { editPolicy, tenantIn, type Editor } from "./edit-policy";
import { ServiceError } from "../errors";

export async function setTenantStatus(
  db: PrismaClient,
  input: { tenant: string; status: TenantStatus },
  editor: Editor,
): Promise<{ tenant: string; status: TenantStatus; changed: boolean }> {
  if (!(TENANT_STATUSES as readonly string[]).includes(input.status)) {
    throw new ServiceError("invalid_request", `status: expected one of ${TENANT_STATUSES.join(", ")}`, { field: "status" });
  }
  const result = await editPolicy(
    db,
    (draft) => {
      const tenant = tenantIn(draft, input.tenant);
      if (tenant.status === input.status) return null;
      tenant.status = input.status;
      return draft;
    },
    editor,
  );
  return { tenant: input.tenant, status: input.status, changed: result.applied };
}
