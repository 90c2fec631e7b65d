"use server";
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { actorOf, guardAction, zodIssues, type ActionResult } from "@/lib/auth/action";
import { globalCapSchema, tierSchema } from "@/lib/policy/policy-file";
import { editDraft } from "../_lib/draft";

const saveTierInput = z.strictObject({ originalName: z.string().max(63).nullable(), tier: z.unknown() });

/** Creates or replaces one tier (weight, limit matrix, quotas) in the draft. */
export async function saveTierAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const parsed = saveTierInput.safeParse(input);
    if (!parsed.success) return { ok: false, status: 400, message: "Malformed request.", issues: zodIssues(parsed.error) };
    const tier = tierSchema.safeParse(parsed.data.tier);
    if (!tier.success) return { ok: false, status: 400, message: "The tier has invalid fields.", issues: zodIssues(tier.error) };
    const { originalName } = parsed.data;
    const result = await editDraft(
      actorOf(principal),
      (spec) => {
        const existing = spec.tiers.findIndex((t) => t.name === (originalName ?? tier.data.name));
        if (originalName === null && existing !== -1) return { error: { path: "name", message: `a tier named ${tier.data.name} already exists` } };
        if (originalName !== null && existing === -1) return { error: { path: "name", message: `tier ${originalName} no longer exists` } };
        if (existing === -1) spec.tiers.push(tier.data);
        else {
          spec.tiers[existing] = tier.data;
          // A rename carries the tier's tenants along.
          if (originalName && originalName !== tier.data.name) for (const t of spec.tenants) if (t.tier === originalName) t.tier = tier.data.name;
        }
        return spec;
      },
      (spec) => ["tiers", spec.tiers.findIndex((t) => t.name === tier.data.name)],
      originalName === null ? `Tier ${tier.data.name} created in the draft.` : `Tier ${tier.data.name} saved to the draft.`,
    );
    revalidatePath("/tiers");
    return result;
  });
}

/** Deletes a tier from the draft; refused while tenants are on it. */
export async function deleteTierAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const name = z.string().max(63).safeParse(input);
    if (!name.success) return { ok: false, status: 400, message: "Malformed request." };
    const result = await editDraft(actorOf(principal), (spec) => {
      const users = spec.tenants.filter((t) => t.tier === name.data).length;
      if (users > 0) return { error: { path: "name", message: `${users} tenant(s) are on ${name.data}; move them to another tier first` } };
      spec.tiers = spec.tiers.filter((t) => t.name !== name.data);
      return spec;
    }, () => [], `Tier ${name.data} deleted from the draft.`);
    revalidatePath("/tiers");
    return result;
  });
}

/** Replaces the global caps of the draft. */
export async function saveGlobalCapsAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const caps = z.array(globalCapSchema).max(100).safeParse(input);
    if (!caps.success) return { ok: false, status: 400, message: "A global cap has invalid fields.", issues: zodIssues(caps.error) };
    const result = await editDraft(
      actorOf(principal),
      (spec) => ({ ...spec, globalCaps: caps.data }),
      () => ["globalCaps"],
      "Global caps saved to the draft.",
    );
    revalidatePath("/tiers");
    return result;
  });
}
