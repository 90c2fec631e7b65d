"use server";
import { guardAction } from "@/lib/auth/action";
import { can } from "@/lib/auth/permissions";
import { db } from "@/lib/db/client";
import { actionFailure, type ActionResult } from "@/lib/errors";
import { fieldErrors, replayInputSchema } from "@/lib/services/justify/justify-input";
import { replayDraft, type DraftReplay } from "@/lib/services/justify/replay-draft";

/**
 * Replays the last N days of recorded usage through the live version and the draft (the replay
 * panel on /policy and /simulator). Recorded usage is per tenant and key: usage.read, and the
 * policy: policy.read.
 */
export async function replayDraftAction(input: unknown): Promise<ActionResult<DraftReplay>> {
  return guardAction("usage.read", async (principal) => {
    if (!can(principal.role, "policy.read")) return { ok: false, status: 403, message: `the ${principal.role} role may not read the policy` };
    const parsed = replayInputSchema.safeParse(input ?? {});
    if (!parsed.success) {
      const errors = fieldErrors(parsed.error);
      return { ok: false, status: 400, message: errors.map((e) => e.text).join("; "), issues: errors.map((e) => ({ path: e.field, message: e.message })) };
    }
    try {
      const replay = await replayDraft(db(), { days: parsed.data.days, nowMs: Date.now() });
      return { ok: true, message: `Replayed ${replay.requests.toLocaleString("en-US")} requests.`, data: replay };
    } catch (error) {
      return actionFailure(error);
    }
  });
}
