"use server";
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { editorOf, guardAction, malformed } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import { actionResult, type ActionResult } from "@/lib/errors";
import { TENANT_STATUSES } from "@/lib/policy/types";
import { createApiKey } from "@/lib/services/access/create-api-key";
import { deleteTenantOverride } from "@/lib/services/policy/delete-tenant-override";
import { revokeApiKey } from "@/lib/services/access/revoke-api-key";
import { rotateApiKey } from "@/lib/services/access/rotate-api-key";
import { resendNotification } from "@/lib/services/billing/quota-notifications";
import { setTenantBilling, setTenantThresholds } from "@/lib/services/policy/set-tenant-billing";
import { setTenantStatus } from "@/lib/services/policy/set-tenant-status";
import { setTenantTier } from "@/lib/services/policy/set-tenant-tier";
import { upsertTenantOverride } from "@/lib/services/policy/upsert-tenant-override";
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

/** Rotates a key: a new one (its plaintext in the result once), the old one working for the overlap. */
export async function rotateKeyAction(input: unknown): Promise<ActionResult<{ key: string; name: string; id: string; oldExpiresAt: string }>> {
  return guardAction("keys.manage", async (principal) => {
    const p = z.strictObject({ slug, keyId: z.string().max(64), overlapMinutes: z.number() }).safeParse(input);
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => rotateApiKey({ db: db(), redis: appRedis() }, { tenant: p.data.slug, keyId: p.data.keyId, overlapMinutes: p.data.overlapMinutes }, editorOf(principal)),
      (v) => ({
        message: p.data.overlapMinutes === 0 ? `Key ${v.created.name} created; ${v.old.name} is revoked.` : `Key ${v.created.name} created; ${v.old.name} keeps working until ${v.oldExpiresAt.replace("T", " ").slice(0, 16)} UTC, then it is revoked.`,
        data: { key: v.created.key, name: v.created.name, id: v.created.id, oldExpiresAt: v.oldExpiresAt },
      }),
    );
    revalidatePath(`/tenants/${p.data.slug}`, "layout");
    return r;
  });
}

/** Sets the tenant's billing anchor and time zone, or (billing null) the UTC calendar month (draft). */
export async function setTenantBillingAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const p = z.strictObject({ slug, billing: z.strictObject({ anchor: z.string().max(40), timeZone: z.string().max(64) }).nullable() }).safeParse(input);
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => setTenantBilling(db(), { tenant: p.data.slug, billing: p.data.billing }, editorOf(principal)),
      (v) => ({ message: v.changed ? "Billing saved to the draft; the new period starts when it is published." : "Billing unchanged." }),
    );
    revalidatePath(`/tenants/${p.data.slug}`);
    return r;
  });
}

/** Sets the tenant's notification thresholds, or (null) its tier's (draft). */
export async function setTenantThresholdsAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const p = z.strictObject({ slug, thresholds: z.array(z.number()).max(10).nullable() }).safeParse(input);
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => setTenantThresholds(db(), { tenant: p.data.slug, thresholds: p.data.thresholds }, editorOf(principal)),
      (v) => ({ message: v.changed ? "Thresholds saved to the draft; publish to apply them." : "Thresholds unchanged." }),
    );
    revalidatePath(`/tenants/${p.data.slug}`);
    return r;
  });
}

/** Queues a quota notification of this tenant again (the same event and id). */
export async function resendNotificationAction(input: unknown): Promise<ActionResult> {
  return guardAction("policy.edit", async (principal) => {
    const p = z.strictObject({ slug, id: z.string().regex(/^ntf_[0-9a-f]{32}$/) }).safeParse(input);
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => resendNotification(db(), { tenant: p.data.slug, id: p.data.id }, editorOf(principal).actor, Date.now()),
      () => ({ message: "Queued again; the worker sends it within seconds." }),
    );
    revalidatePath(`/tenants/${p.data.slug}`);
    return r;
  });
}
