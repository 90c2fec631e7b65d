"use server";
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { actorOf, guardAction, malformed } from "@/lib/auth/action";
import { db } from "@/lib/db/client";
import { actionResult, type ActionResult } from "@/lib/errors";
import { ROLES } from "@/lib/policy/types";
import { createApiToken } from "@/lib/services/access/create-api-token";
import { revokeApiToken } from "@/lib/services/access/revoke-api-token";
import { createUser, setUserDisabled, setUserRole } from "@/lib/services/access/create-user";
import { unlockLogin } from "@/lib/auth/login";
import { appRedis } from "../_lib/redis";

export async function createUserAction(input: unknown): Promise<ActionResult> {
  return guardAction("users.manage", async (principal) => {
    const r = await createUser(db(), input, actorOf(principal));
    revalidatePath("/settings");
    return r.ok ? { ok: true, message: `User ${r.user.email} created as ${r.user.role}.` } : { ok: false, status: 400, message: r.message, issues: [{ path: r.field, message: r.message }] };
  });
}

export async function setUserRoleAction(input: unknown): Promise<ActionResult> {
  return guardAction("users.manage", async (principal) => {
    const p = z.strictObject({ userId: z.string().max(64), role: z.enum(ROLES) }).safeParse(input);
    if (!p.success) return malformed(p.error);
    if (p.data.userId === principal.id && p.data.role !== "admin") return { ok: false, status: 409, message: "You cannot remove your own admin role; ask another admin." };
    const user = await setUserRole(db(), p.data, actorOf(principal));
    revalidatePath("/settings");
    return user ? { ok: true, message: `${user.email} is now ${user.role}.` } : { ok: false, status: 404, message: "No such user." };
  });
}

export async function setUserDisabledAction(input: unknown): Promise<ActionResult> {
  return guardAction("users.manage", async (principal) => {
    const p = z.strictObject({ userId: z.string().max(64), disabled: z.boolean() }).safeParse(input);
    if (!p.success) return malformed(p.error);
    if (p.data.userId === principal.id) return { ok: false, status: 409, message: "You cannot disable yourself." };
    const user = await setUserDisabled(db(), p.data, actorOf(principal), Date.now());
    revalidatePath("/settings");
    return user ? { ok: true, message: `${user.email} ${p.data.disabled ? "disabled" : "enabled"}.` } : { ok: false, status: 404, message: "No such user." };
  });
}

/** Clears a user's failed sign-ins, so a locked-out owner can sign in again (audited as user.unlock). */
export async function unlockUserAction(input: unknown): Promise<ActionResult> {
  return guardAction("users.manage", async (principal) => {
    const p = z.strictObject({ userId: z.string().max(64) }).safeParse(input);
    if (!p.success) return malformed(p.error);
    const r = await unlockLogin(db(), { userId: p.data.userId }, actorOf(principal), Date.now());
    revalidatePath("/settings");
    return r ? { ok: true, message: `${r.email} can sign in again (${r.cleared} failed sign-in${r.cleared === 1 ? "" : "s"} cleared).` } : { ok: false, status: 404, message: "No such user." };
  });
}

/** Creates a service or admin token; the plaintext is in the result once. */
export async function createTokenAction(input: unknown): Promise<ActionResult<{ token: string; name: string }>> {
  return guardAction("tokens.manage", async (principal) => {
    const p = z.strictObject({ kind: z.enum(["service", "admin"]), name: z.string().max(200), role: z.enum(ROLES).optional() }).safeParse(input);
    if (!p.success) return malformed(p.error);
    const r = await actionResult(
      () => createApiToken({ db: db(), redis: appRedis() }, { kind: p.data.kind, name: p.data.name, role: p.data.kind === "admin" ? p.data.role : undefined }, actorOf(principal)),
      (t) => ({ message: `Token ${t.name} created.`, data: { token: t.token, name: t.name } }),
    );
    revalidatePath("/settings");
    return r;
  });
}

export async function revokeTokenAction(input: unknown): Promise<ActionResult> {
  return guardAction("tokens.manage", async (principal) => {
    const p = z.strictObject({ id: z.string().max(64) }).safeParse(input);
    if (!p.success) return { ok: false, status: 400, message: "Malformed request." };
    const r = await actionResult(() => revokeApiToken({ db: db(), redis: appRedis() }, { id: p.data.id }, actorOf(principal)), () => ({ message: "Token revoked." }));
    revalidatePath("/settings");
    return r;
  });
}
