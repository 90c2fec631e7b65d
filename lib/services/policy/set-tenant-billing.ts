/**
 * A tenant's billing period and notification thresholds (the tenant page, `sluice tenants billing`
 * and `sluice tenants thresholds`): one edit of the draft each, validated with the policy file's
 * rules (an unknown time zone or an anchor that is not a date is refused naming the tenant and the
 * field, and nothing is written). Live after the next publish, which starts the tenant's new period
 * at that instant (docs/billing-periods.md, "Changing a tenant's billing").
 */
import { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client";
import { billingSchema, thresholdsSchema } from "../../policy/policy-file";
import { editPolicy, parsePart, tenantIn, type Editor } from "./edit-policy";

/** The tenant page's and the CLI's input: a billing, or null for the UTC calendar month. */
export const tenantBillingInputSchema = z.strictObject({ tenant: z.string().min(1).max(63), billing: billingSchema.nullable() });
export const tenantThresholdsInputSchema = z.strictObject({ tenant: z.string().min(1).max(63), thresholds: thresholdsSchema.nullable() });

export async function setTenantBilling(
  db: PrismaClient,
  input: z.input<typeof tenantBillingInputSchema>,
  editor: Editor,
): Promise<{ tenant: string; changed: boolean }> {
  const { tenant: slug, billing } = parsePart(tenantBillingInputSchema, input);
  const result = await editPolicy(
    db,
    (draft) => {
      const tenant = tenantIn(draft, slug);
      if (JSON.stringify(tenant.billing ?? null) === JSON.stringify(billing)) return null;
      if (billing) tenant.billing = { anchor: billing.anchor, timeZone: billing.timeZone };
      else delete tenant.billing;
      return draft;
    },
    editor,
  );
  return { tenant: slug, changed: result.applied };
}

export async function setTenantThresholds(
  db: PrismaClient,
  input: z.input<typeof tenantThresholdsInputSchema>,
  editor: Editor,
): Promise<{ tenant: string; changed: boolean }> {
  const { tenant: slug, thresholds } = parsePart(tenantThresholdsInputSchema, input);
  const result = await editPolicy(
    db,
    (draft) => {
      const tenant = tenantIn(draft, slug);
      if (JSON.stringify(tenant.thresholds ?? null) === JSON.stringify(thresholds)) return null;
      if (thresholds) tenant.thresholds = [...thresholds];
      else delete tenant.thresholds;
      return draft;
    },
    editor,
  );
  return { tenant: slug, changed: result.applied };
}
