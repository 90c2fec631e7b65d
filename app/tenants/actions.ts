"use server";
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { editorOf, guardAction, malformed } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import { actionResult, type ActionResult } from "@/lib/errors";
import { createTenant } from "@/lib/services/policy/create-tenant";

/** Creates a tenant in the draft (slug, name, tier); its page then adds keys and overrides. */
export async function createTenantAction(input: unknown): Promise<ActionResult<{ slug: string }>> {
  return guardAction("policy.edit", async (principal) => {
    const p = z.strictObject({ slug: z.string().max(200), name: z.string().max(400), tier: z.string().max(200) }).safeParse(input);
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => createTenant(db(), { slug: p.data.slug.trim(), name: p.data.name.trim(), tier: p.data.tier }, editorOf(principal)),
      (v) => ({ message: `Tenant ${v.slug} created in the draft; publish to enforce it.`, data: { slug: v.slug } }),
    );
    revalidatePath("/tenants");
    return r;
  });
}
