"use server";
import { revalidatePath } from "next/cache";
import { editorOf, guardAction } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import { actionResult, type ActionResult } from "@/lib/errors";
import { acknowledgeAlert, silenceAlert } from "@/lib/services/alert-actions";

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
