/**
 * Create a tenant from the control plane (the Tenants page; draft: live after the next publish):
 * slug, name and tier, validated with the policy file's own tenant schema, then the whole draft must
 * still compile (an unknown tier is refused there, naming the field). A slug already taken is
 * refused before anything is written.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { tenantSchema } from "../../policy/policy-file";
import { editPolicy, parsePart, type Editor } from "./edit-policy";
import { ServiceError } from "../errors";

export async function createTenant(
  db: PrismaClient,
  input: { slug: unknown; name: unknown; tier: unknown },
  editor: Editor,
): Promise<{ slug: string }> {
  const tenant = parsePart(tenantSchema, { slug: input.slug, name: input.name, tier: input.tier });
  await editPolicy(
    db,
    (draft, context) => {
      if (draft.spec.tenants.some((t) => t.slug === tenant.slug)) throw new ServiceError("conflict", `Tenant slug: ${tenant.slug} is already taken`, { field: "slug" });
      if (!draft.spec.tiers.some((t) => t.name === tenant.tier)) throw new ServiceError("invalid_request", `Tier: no tier named ${tenant.tier}`, { field: "tier" });
      draft.spec.tenants.push(tenant);
      context.focus(["tenants", draft.spec.tenants.length - 1]);
      return draft;
    },
    editor,
  );
  return { slug: tenant.slug };
}
