"use server";
import { revalidatePath } from "next/cache";
import { editorOf, guardAction } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import { actionResult, type ActionResult } from "@/lib/errors";
import { env } from "@/lib/env";
import { acknowledgeAlert, silenceAlert } from "@/lib/services/observe/alert-actions";
import { ALERT_RULE_SPECS, saveAlertRule } from "@/lib/services/observe/alert-rules";

/** "I am on it": an audit entry on the alert (sre, admin). */
export async function acknowledgeAlertAction(input: unknown): Promise<ActionResult> {
  return guardAction("dashboards.read", async (principal) => {
    const result = await actionResult(
      () => acknowledgeAlert(db(), input, editorOf(principal)),
      () => ({ message: "Acknowledged." }),
    );
    revalidatePath("/", "layout");
    return result;
  });
}

/** No webhook for the alert's kind and subject for `minutes` (sre, admin). */
export async function silenceAlertAction(input: unknown): Promise<ActionResult> {
  return guardAction("dashboards.read", async (principal) => {
    const result = await actionResult(
      () => silenceAlert(db(), input, editorOf(principal)),
      (r) => ({ message: `Silenced until ${r.until.slice(0, 16).replace("T", " ")} UTC.` }),
    );
    revalidatePath("/", "layout");
    return result;
  });
}

/** Saves an alert rule: threshold, window, webhook (sre, admin); the worker judges by it from its next pass. */
export async function saveAlertRuleAction(input: unknown): Promise<ActionResult> {
  return guardAction("dashboards.read", async (principal) => {
    const result = await actionResult(
      () => saveAlertRule(db(), input, editorOf(principal), { allowPrivateWebhooks: env().ALERT_WEBHOOK_ALLOW_PRIVATE === "1" }),
      (r) => ({ message: `Saved: ${ALERT_RULE_SPECS[r.kind].label} at ${+(r.threshold * 100).toFixed(2)} %${r.windowMinutes === null ? "" : ` over ${r.windowMinutes} min`}, to ${r.webhookUrl ?? "the worker's webhook"}. The worker uses it from its next pass (within a minute).` }),
    );
    revalidatePath("/dashboards");
    return result;
  });
}
