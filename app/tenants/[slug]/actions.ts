"use server";
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { editorOf, guardAction, malformed } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import { actionResult, type ActionResult } from "@/lib/errors";
import { TENANT_STATUSES } from "@/lib/policy/types";
import { createApiKey } from "@/lib/services/create-api-key";
import { deleteTenantOverride } from "@/lib/services/delete-tenant-override";
import { revokeApiKey } from "@/lib/services/revoke-api-key";
import { setTenantStatus } from "@/lib/services/set-tenant-status";
import { setTenantTier } from "@/lib/services/set-tenant-tier";
import { upsertTenantOverride } from "@/lib/services/upsert-tenant-override";
import { appRedis } from "../../_lib/redis";

const slug = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/);

/** Moves a tenant to another tier (draft); refused when the draft would no longer compile. */
export async function setTenantTierAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const p = z.strictObject({ slug, tier: z.string().min(1).max(63) }).safeParse(input);
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => setTenantTier(db(), { tenant: p.data.slug, tier: p.data.tier }, editorOf(principal)),
      (v) => ({ message: v.changed ? `Moved ${v.tenant} to ${v.tier} in the draft; publish to enforce it.` : `${v.tenant} is already on ${v.tier}.` }),
    );
    revalidatePath(`/tenants/${p.data.slug}`);
    return r;
  });
}

/** Suspends or reactivates a tenant (draft). */
export async function setTenantStatusAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const p = z.strictObject({ slug, status: z.enum(TENANT_STATUSES) }).safeParse(input);
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => setTenantStatus(db(), { tenant: p.data.slug, status: p.data.status }, editorOf(principal)),
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
    if (!p.success) return malformed(p.error);
    const { slug: tenant, id, override } = p.data;
    const r =
      override === null
        ? id === null
          ? ({ ok: false, status: 400, message: "Nothing to remove." } as const)
          : await actionResult(() => deleteTenantOverride(db(), { tenant, id }, editorOf(principal)), () => ({ message: "Override removed from the draft." }))
        : await actionResult(
            () => upsertTenantOverride(db(), { tenant, id: id ?? undefined, override }, editorOf(principal)),
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
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => createApiKey({ db: db(), redis: appRedis() }, { tenant: p.data.slug, name: p.data.name || undefined }, editorOf(principal)),
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
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => revokeApiKey({ db: db(), redis: appRedis() }, { tenant: p.data.slug, name: p.data.name }, editorOf(principal)),
      (v) => ({ message: v.alreadyRevoked ? `Key ${v.name} was already revoked.` : `Key ${v.name} (${v.prefix}…) revoked.` }),
    );
    revalidatePath(`/tenants/${p.data.slug}`);
    return r;
  });
}
