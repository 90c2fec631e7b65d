"use server";
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { actorOf, guardAction, zodIssues, type ActionResult } from "@/lib/auth/action";
import { operationSchema } from "@/lib/policy/policy-file";
import { FAILURE_MODES } from "@/lib/policy/types";
import { editDraft } from "../_lib/draft";

/** Creates (originalName null) or replaces an operation in the draft. */
export async function saveOperationAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const p = z.strictObject({ originalName: z.string().max(63).nullable(), operation: z.unknown() }).safeParse(input);
    if (!p.success) return { ok: false, status: 400, message: "Malformed request.", issues: zodIssues(p.error) };
    const op = operationSchema.safeParse(p.data.operation);
    if (!op.success) return { ok: false, status: 400, message: "The operation has invalid fields.", issues: zodIssues(op.error) };
    const original = p.data.originalName;
    const r = await editDraft(
      actorOf(principal),
      (spec) => {
        const i = spec.operations.findIndex((o) => o.name === (original ?? op.data.name));
        if (original === null && i !== -1) return { error: { path: "name", message: `an operation named ${op.data.name} already exists` } };
        if (original !== null && i === -1) return { error: { path: "name", message: `operation ${original} no longer exists` } };
        if (i === -1) spec.operations.push(op.data);
        else spec.operations[i] = op.data;
        return spec;
      },
      (spec) => ["operations", spec.operations.findIndex((o) => o.name === op.data.name)],
      `Operation ${op.data.name} saved to the draft.`,
    );
    revalidatePath("/operations");
    return r;
  });
}

/** Deletes an operation from the draft (refused by validation while limits refer to it). */
export async function deleteOperationAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const name = z.string().min(1).max(63).safeParse(input);
    if (!name.success) return { ok: false, status: 400, message: "Malformed request." };
    const r = await editDraft(actorOf(principal), (spec) => ({ ...spec, operations: spec.operations.filter((o) => o.name !== name.data) }), () => [], `Operation ${name.data} deleted from the draft.`);
    revalidatePath("/operations");
    return r;
  });
}

/** Sets one operation's failure mode (what happens when Redis cannot answer); "" = the default. */
export async function setOperationFailureModeAction(input: unknown): Promise<ActionResult> {
  return guardAction("failure_mode.set", async (principal) => {
    const p = z.strictObject({ name: z.string().min(1).max(63), failureMode: z.enum(FAILURE_MODES).nullable() }).safeParse(input);
    if (!p.success) return { ok: false, status: 400, message: "Malformed request.", issues: zodIssues(p.error) };
    const r = await editDraft(
      actorOf(principal),
      (spec) => {
        const op = spec.operations.find((o) => o.name === p.data.name);
        if (!op) return { error: { path: "name", message: `no operation ${p.data.name}` } };
        if (p.data.failureMode === null) delete op.failureMode;
        else op.failureMode = p.data.failureMode;
        return spec;
      },
      () => [],
      `Failure mode of ${p.data.name} saved to the draft.`,
    );
    revalidatePath("/operations");
    return r;
  });
}
