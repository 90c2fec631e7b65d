/**
 * The tiers page: create a tier, or replace one (weight, limit matrix, quotas), in the draft. The
 * domain rules live here, not in the form's action: names are unique, and a rename carries the
 * tier's tenants along. Issues about the tier read relative to it (`limits.0.window`) in the form.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { tierSchema } from "../../policy/policy-file";
import { editPolicy, parsePart, putNamed, type Editor } from "./edit-policy";

export async function saveTier(
  db: PrismaClient,
  input: { originalName: string | null; tier: unknown },
  editor: Editor,
): Promise<{ name: string; created: boolean; changed: boolean }> {
  const tier = parsePart(tierSchema, input.tier);
  const { originalName } = input;
  const result = await editPolicy(
    db,
    (draft, context) => {
      context.focus(["tiers", putNamed(draft.spec.tiers, originalName, tier, "tier")]);
      // A rename carries the tier's tenants along.
      if (originalName !== null && originalName !== tier.name) for (const t of draft.spec.tenants) if (t.tier === originalName) t.tier = tier.name;
      return draft;
    },
    editor,
  );
  return { name: tier.name, created: originalName === null, changed: result.applied };
}
