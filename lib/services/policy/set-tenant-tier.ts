/** Move a tenant to another tier (draft: live after the next publish). One edit of the draft. */
import type { PrismaClient } from "../../generated/prisma/client";
import { editPolicy, tenantIn, type Editor } from "./edit-policy";
import { ServiceError } from "../errors";

export async function setTenantTier(
  db: PrismaClient,
  input: { tenant: string; tier: string },
  editor: Editor,
): Promise<{ tenant: string; tier: string; changed: boolean }> {
  const result = await editPolicy(
    db,
    (draft) => {
      const tenant = tenantIn(draft, input.tenant);
      if (!draft.spec.tiers.some((t) => t.name === input.tier)) {
        throw new ServiceError("invalid_request", `tier: unknown tier ${JSON.stringify(input.tier)}`, { field: "tier" });
      }
      if (tenant.tier === input.tier) return null;
      tenant.tier = input.tier;
      return draft;
    },
    editor,
  );
  return { tenant: input.tenant, tier: input.tier, changed: result.applied };
}
