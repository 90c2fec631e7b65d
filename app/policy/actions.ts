"use server";
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { actorOf, guardAction, type ActionResult } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import { ServiceError } from "@/lib/services/errors";
import { publishPolicy } from "@/lib/services/publish-policy";
import { rollbackPolicy } from "@/lib/services/rollback-policy";
import { appRedis } from "../_lib/redis";

function failure(error: unknown): ActionResult<{ version: number }> {
  if (error instanceof ServiceError) {
    return { ok: false, status: error.status as 400, message: error.message, issues: error.issues.map((i) => ({ path: i.path, message: i.message })) };
  }
  return { ok: false, status: 500, message: `Publishing failed: ${error instanceof Error ? error.message : String(error)}. The live policy is unchanged.` };
}

const publishInput = z.strictObject({ note: z.string().trim().max(500).optional() });

/** Compiles the draft and makes it the live policy (a new version). */
export async function publishAction(input: unknown): Promise<ActionResult<{ version: number }>> {
  return guardAction("policy.publish", async (principal) => {
    const parsed = publishInput.safeParse(input ?? {});
    if (!parsed.success) return { ok: false, status: 400, message: "note: at most 500 characters" };
    try {
      const r = await publishPolicy({ db: db(), redis: appRedis() }, { actor: actorOf(principal), note: parsed.data.note || undefined });
      revalidatePath("/policy");
      return r.status === "published"
        ? { ok: true, message: `Published version ${r.version}.`, data: { version: r.version } }
        : { ok: true, message: `The draft equals live version ${r.version}; nothing new to publish.`, data: { version: r.version } };
    } catch (error) {
      return failure(error);
    }
  });
}

/** Republishes an earlier version as a new one. */
export async function rollbackAction(input: unknown): Promise<ActionResult<{ version: number }>> {
  return guardAction("policy.publish", async (principal) => {
    const parsed = z.strictObject({ toVersion: z.number().int().min(1) }).safeParse(input);
    if (!parsed.success) return { ok: false, status: 400, message: "version: expected an integer ≥ 1" };
    try {
      const r = await rollbackPolicy({ db: db(), redis: appRedis() }, { actor: actorOf(principal), toVersion: parsed.data.toVersion });
      revalidatePath("/policy");
      return { ok: true, message: `Rolled back: version ${r.version} now serves the document of version ${parsed.data.toVersion}.`, data: { version: r.version } };
    } catch (error) {
      return failure(error);
    }
  });
}
