/**
 * Create or replace one tenant override (draft: live after the next publish). The override is
 * validated with the policy file's own schema, then the whole draft must still compile (an
 * override with no window to inherit is refused here, not at publish time): the one validation of
 * every edit (lib/services/policy/edit-policy.ts).
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { naturalKeys, type Draft } from "../../policy/plan";
import { overrideSchema, type OverrideSpec } from "../../policy/policy-file";
import { editPolicy, parsePart, tenantIn, type EditContext, type Editor } from "./edit-policy";
import { ServiceError } from "../errors";

/** The index of override `id` among the tenant's, or not_found (another tenant's id is not found either). */
export function overrideIndex(draft: Draft, context: EditContext, slug: string, id: string): number {
  const tenant = tenantIn(draft, slug);
  const index = naturalKeys.overrides(slug, tenant.overrides).findIndex((key) => context.ids.override.get(key) === id);
  if (index === -1) throw new ServiceError("not_found", "no such override for this tenant", { field: "id" });
  return index;
}

export async function upsertTenantOverride(
  db: PrismaClient,
  input: { tenant: string; id?: string; override: unknown; nowMs?: number },
  editor: Editor,
): Promise<{ id: string; created: boolean; override: OverrideSpec }> {
  const o = parsePart(overrideSchema, input.override);
  // An override that is over before it is saved would only look like it did something.
  if (o.expiresAt !== undefined && Date.parse(o.expiresAt) <= (input.nowMs ?? Date.now())) {
    throw new ServiceError("invalid_request", `Expires: ${o.expiresAt} is in the past; choose a time after now, or leave it empty for no expiry`, { field: "expiresAt" });
  }
  let naturalKey = "";
  const result = await editPolicy(
    db,
    (draft, context) => {
      const tenant = tenantIn(draft, input.tenant);
      const index = input.id === undefined ? tenant.overrides.length : overrideIndex(draft, context, input.tenant, input.id);
      tenant.overrides[index] = o;
      naturalKey = naturalKeys.overrides(tenant.slug, tenant.overrides)[index];
      context.focus(["tenants", draft.spec.tenants.indexOf(tenant), "overrides", index]);
      return draft;
    },
    editor,
  );
  return { id: result.ids.override.get(naturalKey) ?? input.id ?? "", created: input.id === undefined, override: o };
}
