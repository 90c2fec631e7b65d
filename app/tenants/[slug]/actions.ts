"use server";
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { actorOf, guardAction, zodIssues, type ActionResult } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import { TENANT_STATUSES } from "@/lib/policy/types";
import { createApiKey } from "@/lib/services/create-api-key";
import { deleteTenantOverride } from "@/lib/services/delete-tenant-override";
import { revokeApiKey } from "@/lib/services/revoke-api-key";
import { setTenantStatus } from "@/lib/services/set-tenant-status";
import { setTenantTier } from "@/lib/services/set-tenant-tier";
import { upsertTenantOverride } from "@/lib/services/upsert-tenant-override";
import { compileDraft } from "@/lib/services/publish-policy";
import { ServiceError } from "@/lib/services/errors";
import { appRedis } from "../../_lib/redis";
import { serviceResult } from "../../_lib/service-result";

const slug = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/);
const bad = (error: z.ZodError): ActionResult => ({ ok: false, status: 400, message: "Malformed request.", issues: zodIssues(error) });

/** Moves a tenant to another tier (draft). */
export async function setTenantTierAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const p = z.strictObject({ slug, tier: z.string().min(1).max(63) }).safeParse(input);
    if (!p.success) return bad(p.error);
    const r = await serviceResult(
      () => setTenantTier(db(), { tenant: p.data.slug, tier: p.data.tier }, actorOf(principal)),
      (v) => ({ message: v.changed ? `Moved ${v.tenant} to ${v.tier} in the draft; publish to enforce it.` : `${v.tenant} is already on ${v.tier}.` }),
    );
    // Moving a tenant can leave an override with nothing to inherit: say so now, not at publish.
    if (r.ok) {
      try {
        await compileDraft(db());
      } catch (error) {
        if (!(error instanceof ServiceError)) throw error;
        r.message = `${r.message} Warning: the draft no longer compiles (${error.message}); fix it before publishing.`;
      }
    }
    revalidatePath(`/tenants/${p.data.slug}`);
    return r;
  });
}

/** Suspends or reactivates a tenant (draft). */
export async function setTenantStatusAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const p = z.strictObject({ slug, status: z.enum(TENANT_STATUSES) }).safeParse(input);
    if (!p.success) return bad(p.error);
    const r = await serviceResult(
      () => setTenantStatus(db(), { tenant: p.data.slug, status: p.data.status }, actorOf(principal)),
      () => ({ message: p.data.status === "suspended" ? `${p.data.slug} is suspended in the draft; publish to enforce it.` : `${p.data.slug} is reactivated in the draft; publish to enforce it.` }),
    );
    revalidatePath(`/tenants/${p.data.slug}`);
    return r;
  });
}

/** Adds (no id) or replaces (id) an override, or removes it (override null). */
export async function saveOverrideAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const p = z.strictObject({ slug, id: z.string().max(64).nullable(), override: z.unknown().nullable() }).safeParse(input);
    if (!p.success) return bad(p.error);
    const { slug: tenant, id, override } = p.data;
    const r =
      override === null
        ? id === null
          ? ({ ok: false, status: 400, message: "Nothing to remove." } as const)
          : await serviceResult(() => deleteTenantOverride(db(), { tenant, id }, actorOf(principal)), () => ({ message: "Override removed from the draft." }))
        : await serviceResult(
            () => upsertTenantOverride(db(), { tenant, id: id ?? undefined, override }, actorOf(principal)),
            (v) => ({ message: v.created ? "Override added to the draft." : "Override saved to the draft." }),
          );
    revalidatePath(`/tenants/${tenant}`);
    return r;
  });
}

/** Creates an API key; the plaintext is in the result once and never again. */
export async function createKeyAction(input: unknown): Promise<ActionResult<{ key: string; prefix: string; name: string }>> {
  return guardAction("keys.manage", async (principal) => {
    const p = z.strictObject({ slug, name: z.string().trim().max(63).optional() }).safeParse(input);
    if (!p.success) return { ok: false, status: 400, message: "Malformed request.", issues: zodIssues(p.error) };
    const r = await serviceResult(
      () => createApiKey({ db: db(), redis: appRedis() }, { tenant: p.data.slug, name: p.data.name || undefined }, actorOf(principal)),
      (v) => ({ message: `Key ${v.name} created.`, data: { key: v.key, prefix: v.prefix, name: v.name } }),
    );
    revalidatePath(`/tenants/${p.data.slug}`);
    return r;
  });
}

/** Revokes a key of this tenant (by name); effective immediately on the decision path. */
export async function revokeKeyAction(input: unknown): Promise<ActionResult> {
  return guardAction("keys.manage", async (principal) => {
    const p = z.strictObject({ slug, name: z.string().min(1).max(63) }).safeParse(input);
    if (!p.success) return bad(p.error);
    const r = await serviceResult(
      () => revokeApiKey({ db: db(), redis: appRedis() }, { tenant: p.data.slug, name: p.data.name }, actorOf(principal)),
      (v) => ({ message: v.alreadyRevoked ? `Key ${v.name} was already revoked.` : `Key ${v.name} (${v.prefix}…) revoked.` }),
    );
    revalidatePath(`/tenants/${p.data.slug}`);
    return r;
  });
}
