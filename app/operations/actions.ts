"use server";
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { editorOf, guardAction, malformed } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import { actionResult, type ActionResult } from "@/lib/errors";
import { FAILURE_MODES } from "@/lib/policy/types";
import { applyFailureModes } from "@/lib/services/policy/apply-failure-modes";
import { deleteOperation } from "@/lib/services/policy/delete-operation";
import { saveOperation } from "@/lib/services/policy/save-operation";
import { setOperationFailureMode } from "@/lib/services/policy/set-failure-mode";
import { appRedis } from "../_lib/redis";

/**
 * Creates (originalName null) or replaces an operation in the draft. A changed failure mode in it
 * needs failure_mode.set: the edit checks every field it changes against the role.
 */
export async function saveOperationAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const p = z.strictObject({ originalName: z.string().max(63).nullable(), operation: z.unknown() }).safeParse(input);
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => saveOperation(db(), p.data, editorOf(principal)),
      (v) => ({ message: v.changed ? `Operation ${v.name} saved to the draft.` : "Nothing changed." }),
    );
    revalidatePath("/operations");
    return r;
  });
}

/** Deletes an operation from the draft (refused by validation while limits refer to it). */
export async function deleteOperationAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const name = z.string().min(1).max(63).safeParse(input);
    if (!name.success) return malformed(name.error);
    const r = await actionResult(
      () => deleteOperation(db(), { name: name.data }, editorOf(principal)),
      (v) => ({ message: v.deleted ? `Operation ${v.name} deleted from the draft.` : "Nothing changed." }),
    );
    revalidatePath("/operations");
    return r;
  });
}

/** Sets one operation's failure mode (what happens when Redis cannot answer); null = the default. */
export async function setOperationFailureModeAction(input: unknown): Promise<ActionResult> {
  return guardAction("failure_mode.set", async (principal) => {
    const p = z.strictObject({ name: z.string().min(1).max(63), failureMode: z.enum(FAILURE_MODES).nullable() }).safeParse(input);
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => setOperationFailureMode(db(), p.data, editorOf(principal)),
      (v) => ({ message: v.changed ? `Failure mode of ${p.data.name} saved to the draft.` : "Nothing changed." }),
    );
    revalidatePath("/operations");
    return r;
  });
}

/**
 * Applies failure modes to the live policy at once (sre, admin): a new version that changes only
 * them; the draft keeps its other pending changes (lib/services/policy/apply-failure-modes.ts).
 */
export async function applyFailureModesAction(input: unknown): Promise<ActionResult<{ version: number }>> {
  return guardAction("failure_mode.set", async (principal) => {
    const r = await actionResult(
      () => applyFailureModes({ db: db(), redis: appRedis() }, input, editorOf(principal)),
      (v) => ({
        message:
          v.status === "unchanged"
            ? `Nothing changed: live v${v.version} already has these failure modes.`
            : `Live: v${v.version} changes only failure modes (${v.changed.map((c) => `${c.field === "defaults.failureMode" ? "default" : c.field.slice(11, -12)} ${c.before} → ${c.after}`).join(", ")}). Other draft changes stay unpublished.`,
        data: { version: v.version },
      }),
    );
    revalidatePath("/", "layout");
    return r;
  });
}
