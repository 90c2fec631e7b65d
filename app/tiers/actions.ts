"use server";
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { editorOf, guardAction, malformed } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import { actionResult, type ActionResult } from "@/lib/errors";
import { deleteTier } from "@/lib/services/policy/delete-tier";
import { saveGlobalCaps } from "@/lib/services/policy/save-global-caps";
import { saveTier } from "@/lib/services/policy/save-tier";

const saveTierInput = z.strictObject({ originalName: z.string().max(63).nullable(), tier: z.unknown() });

/** Creates or replaces one tier (weight, limit matrix, quotas) in the draft. */
export async function saveTierAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const p = saveTierInput.safeParse(input);
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => saveTier(db(), p.data, editorOf(principal)),
      (v) => ({ message: !v.changed ? "Nothing changed." : v.created ? `Tier ${v.name} created in the draft.` : `Tier ${v.name} saved to the draft.` }),
    );
    revalidatePath("/tiers");
    return r;
  });
}

/** Deletes a tier from the draft; refused while tenants are on it. */
export async function deleteTierAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const name = z.string().max(63).safeParse(input);
    if (!name.success) return malformed(name.error);
    const r = await actionResult(
      () => deleteTier(db(), { name: name.data }, editorOf(principal)),
      (v) => ({ message: v.deleted ? `Tier ${v.name} deleted from the draft.` : "Nothing changed." }),
    );
    revalidatePath("/tiers");
    return r;
  });
}

/** Replaces the global caps of the draft. */
export async function saveGlobalCapsAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const r = await actionResult(
      () => saveGlobalCaps(db(), { caps: input }, editorOf(principal)),
      (v) => ({ message: v.changed ? "Global caps saved to the draft." : "Nothing changed." }),
    );
    revalidatePath("/tiers");
    return r;
  });
}
