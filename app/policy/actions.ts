"use server";
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { actorOf, editorOf, guardAction } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import { actionResult, type ActionResult } from "@/lib/errors";
import { publishPolicy } from "@/lib/services/policy/publish-policy";
import { discardDraft } from "@/lib/services/policy/discard-draft";
import { rollbackPolicy } from "@/lib/services/policy/rollback-policy";
import { approveRequest, rejectRequest } from "@/lib/services/approval/decide-approval";
import { appRedis } from "../_lib/redis";

const publishInput = z.strictObject({ note: z.string().trim().max(500).optional() });

/** Compiles the draft and makes it the live policy (a new version). */
export async function publishAction(input: unknown): Promise<ActionResult<{ version: number }>> {
  return guardAction("policy.publish", async (principal) => {
    const parsed = publishInput.safeParse(input ?? {});
    if (!parsed.success) return { ok: false, status: 400, message: "note: at most 500 characters" };
    const result = await actionResult(
      () => publishPolicy({ db: db(), redis: appRedis() }, { actor: actorOf(principal), role: principal.role, note: parsed.data.note || undefined }),
      (r) => ({
        message: r.approval
          ? `Approval required (${r.approval.reasons.join("; ")}): request ${r.approval.id} waits for another user with publish rights. Nothing was published.`
          : r.status === "published"
            ? `Published version ${r.version}.`
            : `The draft equals live version ${r.version}; nothing new to publish.`,
        data: { version: r.version },
      }),
    );
    revalidatePath("/", "layout");
    return result;
  });
}

/** Republishes an earlier version as a new one. */
export async function rollbackAction(input: unknown): Promise<ActionResult<{ version: number }>> {
  return guardAction("policy.publish", async (principal) => {
    const parsed = z.strictObject({ toVersion: z.number().int().min(1) }).safeParse(input);
    if (!parsed.success) return { ok: false, status: 400, message: "version: expected an integer ≥ 1" };
    const result = await actionResult(
      () => rollbackPolicy({ db: db(), redis: appRedis() }, { actor: actorOf(principal), toVersion: parsed.data.toVersion }),
      (r) => ({
        message:
          `Rolled back: version ${r.version} now serves the document of version ${parsed.data.toVersion}. ` +
          (r.draftReset === null
            ? `Warning: ${r.draftNote}.`
            : `The draft was reset to it (${r.pendingDiscarded === 0 ? "no unpublished change" : `${r.pendingDiscarded} unpublished change${r.pendingDiscarded === 1 ? "" : "s"}`} discarded).`),
        data: { version: r.version },
      }),
    );
    revalidatePath("/", "layout");
    return result;
  });
}

/** Resets the draft to the live version: every unpublished change is discarded. */
export async function discardDraftAction(): Promise<ActionResult<{ version: number }>> {
  return guardAction("policy.edit", async (principal) => {
    const result = await actionResult(
      () => discardDraft(db(), editorOf(principal)),
      (r) => ({
        message: r.changes === 0 ? `The draft already equals live version ${r.version}.` : `Draft reset to live version ${r.version} (${r.changes} change${r.changes === 1 ? "" : "s"} discarded).`,
        data: { version: r.version },
      }),
    );
    revalidatePath("/", "layout");
    return result;
  });
}

const decisionInput = z.strictObject({ id: z.string().min(1).max(64), decision: z.enum(["approve", "reject"]), reason: z.string().trim().max(500).optional() });

/** Approves or rejects a pending request (never one's own approve: the service refuses it). */
export async function decideApprovalAction(input: unknown): Promise<ActionResult<{ state: string }>> {
  return guardAction("policy.publish", async (principal) => {
    const parsed = decisionInput.safeParse(input);
    if (!parsed.success) return { ok: false, status: 400, message: `${parsed.error.issues[0]?.path.join(".") || "input"}: ${parsed.error.issues[0]?.message ?? "invalid"}` };
    const { id, decision, reason } = parsed.data;
    const actor = actorOf(principal);
    const result = await actionResult(
      () => (decision === "approve" ? approveRequest({ db: db(), redis: appRedis() }, id, { actor, reason }) : rejectRequest({ db: db() }, id, { actor, reason: reason || `rejected by ${actor}` })),
      (r) => ({
        message:
          decision === "reject"
            ? `Rejected ${r.approval.id}: nothing was published.`
            : `Approved ${r.approval.id}: ${r.version !== null ? `version ${r.version} is live` : `rollout ${r.rollout ?? ""} goes on`}.`,
        data: { state: r.approval.state },
      }),
    );
    revalidatePath("/", "layout");
    return result;
  });
}
