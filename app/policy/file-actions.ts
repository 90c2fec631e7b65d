"use server";
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { editorOf, guardAction, malformed } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import { actionResult, type ActionResult } from "@/lib/errors";
import { applyPolicyFileText, MAX_POLICY_FILE_CHARS, previewPolicyFile, type PolicyFilePreview } from "@/lib/services/policy/preview-policy-file";

const fileInput = z.strictObject({ text: z.string().max(MAX_POLICY_FILE_CHARS + 1) });

/** A dry run of a pasted or uploaded policy file: what would change in the draft; writes nothing. */
export async function previewPolicyFileAction(input: unknown): Promise<ActionResult<PolicyFilePreview>> {
  return guardAction("policy.edit", async (principal) => {
    const p = fileInput.safeParse(input);
    if (!p.success) return malformed(p.error);
    return actionResult(
      () => previewPolicyFile(db(), p.data.text, editorOf(principal)),
      (v) => ({ message: v.lines.length === 0 ? "The file equals the draft: applying it changes nothing." : `Applying it would make ${v.lines.length} change${v.lines.length === 1 ? "" : "s"} to the draft.`, data: v }),
    );
  });
}

/** Applies the policy file to the draft; generated keys' plaintexts are in the result once. */
export async function applyPolicyFileAction(input: unknown): Promise<ActionResult<{ generatedKeys: { tenant: string; name: string; key: string }[] }>> {
  return guardAction("policy.edit", async (principal) => {
    const p = fileInput.safeParse(input);
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => applyPolicyFileText(db(), p.data.text, editorOf(principal)),
      (v) => {
        const n = v.plan.created.length + v.plan.changed.length + v.plan.deleted.length;
        return { message: v.applied ? `Applied to the draft: ${n} change${n === 1 ? "" : "s"}. Publish to enforce them.` : "Nothing to apply: the file equals the draft.", data: { generatedKeys: v.generatedKeys } };
      },
    );
    revalidatePath("/", "layout");
    return r;
  });
}
