"use server";
/** The Policy page's rollout panel (components/rollout-panel.tsx): start a guarded rollout, promote, pause, abort. */
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { actorOf, guardAction } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import { actionResult, type ActionResult } from "@/lib/errors";
import { splitSteps } from "@/lib/policy/rollout";
import { changeRollout, ROLLOUT_ACTIONS } from "@/lib/services/rollout/control-rollout";
import { startRollout } from "@/lib/services/rollout/start-rollout";
import { appRedis } from "../_lib/redis";

const startInput = z.strictObject({ canaries: z.string().max(10_000), steps: z.string().max(1_000), note: z.string().trim().max(500).optional() });

/** Starts a guarded rollout of the draft: the canaries (comma-separated slugs), then the steps (`10%:1h, 100%`). */
export async function startRolloutAction(input: unknown): Promise<ActionResult<{ id: string }>> {
  return guardAction("policy.publish", async (principal) => {
    const parsed = startInput.safeParse(input);
    if (!parsed.success) return { ok: false, status: 400, message: `${parsed.error.issues[0]?.path.join(".") ?? "input"}: ${parsed.error.issues[0]?.message ?? "invalid"}` };
    const spec = { canaries: splitSteps(parsed.data.canaries), steps: splitSteps(parsed.data.steps), ...(parsed.data.note ? { note: parsed.data.note } : {}) };
    const result = await actionResult(
      () => startRollout({ db: db(), redis: appRedis() }, spec, { actor: actorOf(principal), role: principal.role }),
      (r) =>
        r.status === "approval_pending"
          ? { message: `Approval required (${r.approval.reasons.join("; ")}): request ${r.approval.id} waits for another user with publish rights. Nothing was rolled out.`, data: { id: r.approval.id } }
          : { message: `Rollout started: v${r.rollout.candidateVersion} goes to ${r.rollout.stepLabel.replace(/^step \d+ of \d+: /, "")} first.`, data: { id: r.rollout.id } },
    );
    revalidatePath("/", "layout");
    return result;
  });
}

/** Promote, pause or abort the running rollout. */
export async function rolloutAction(input: unknown): Promise<ActionResult<{ state: string }>> {
  return guardAction("policy.publish", async (principal) => {
    const parsed = z.strictObject({ action: z.enum(ROLLOUT_ACTIONS) }).safeParse(input);
    if (!parsed.success) return { ok: false, status: 400, message: "action: expected promote, pause or abort" };
    const result = await actionResult(
      () => changeRollout({ db: db(), redis: appRedis() }, parsed.data.action, { actor: actorOf(principal), role: principal.role }),
      (v) => ({
        message: v.approval
          ? `The next step needs approval: request ${v.approval.id} waits for another user with publish rights (${v.approval.reasons.join("; ")}).`
          : v.state === "completed"
            ? `Completed: v${v.candidateVersion} is live for everyone.`
            : `Rollout ${v.state}: ${v.stepLabel}.`,
        data: { state: v.state },
      }),
    );
    revalidatePath("/", "layout");
    return result;
  });
}
