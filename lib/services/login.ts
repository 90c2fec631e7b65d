/**
 * Sign-in with email and password, rate-limited per account: after 5 failures within 15 minutes
 * the account answers `rate_limited` (HTTP 429) until the oldest of them is 15 minutes old.
 * An unknown email and a wrong password give the same answer, in the same time, and both count.
 */
import { z } from "zod";
import type { PrismaClient } from "../generated/prisma/client";
import { dummyVerify, verifyPassword } from "../auth/password";
import type { Principal } from "../auth/require-role";
import type { Role } from "../policy/types";

export const LOGIN_MAX_FAILURES = 5;
export const LOGIN_WINDOW_MS = 15 * 60_000;
/** The one message for an unknown email and a wrong password. */
export const LOGIN_INVALID_MESSAGE = "Wrong email or password.";

export const loginInputSchema = z.strictObject({
  email: z.string().trim().toLowerCase().email("expected an email address").max(320),
  password: z.string().min(1, "enter your password").max(1024),
});
export type LoginInput = z.input<typeof loginInputSchema>;

export type LoginResult =
  | { ok: true; principal: Principal }
  | { ok: false; reason: "invalid"; message: string }
  | { ok: false; reason: "rate_limited"; message: string; retryAfterSeconds: number };

/** Whether the account is locked right now, and for how long. Reads only. */
export async function loginLockout(
  db: PrismaClient,
  email: string,
  nowMs: number,
): Promise<{ locked: false } | { locked: true; retryAfterSeconds: number }> {
  const normalized = email.trim().toLowerCase();
  const since = new Date(nowMs - LOGIN_WINDOW_MS);
  const lastSuccess = await db.loginAttempt.findFirst({
    where: { email: normalized, succeeded: true, at: { gt: since } },
    orderBy: { at: "desc" },
    select: { at: true },
  });
  const failures = await db.loginAttempt.findMany({
    where: { email: normalized, succeeded: false, at: { gt: lastSuccess?.at ?? since } },
    orderBy: { at: "desc" },
    take: LOGIN_MAX_FAILURES,
    select: { at: true },
  });
  if (failures.length < LOGIN_MAX_FAILURES) return { locked: false };
  const oldest = failures[failures.length - 1].at.getTime();
  return { locked: true, retryAfterSeconds: Math.max(1, Math.ceil((oldest + LOGIN_WINDOW_MS - nowMs) / 1000)) };
}

function rateLimited(retryAfterSeconds: number): LoginResult {
  const minutes = Math.ceil(retryAfterSeconds / 60);
  return {
    ok: false,
    reason: "rate_limited",
    retryAfterSeconds,
    message: `Too many failed sign-ins for this account. Try again in ${minutes} minute${minutes === 1 ? "" : "s"}.`,
  };
}

/** Checks the credentials and records the attempt. Never throws for bad input: it answers `invalid`. */
export async function login(db: PrismaClient, input: unknown, nowMs: number): Promise<LoginResult> {
  const parsed = loginInputSchema.safeParse(input);
  if (!parsed.success) return { ok: false, reason: "invalid", message: LOGIN_INVALID_MESSAGE };
  const { email, password } = parsed.data;

  const lockout = await loginLockout(db, email, nowMs);
  if (lockout.locked) return rateLimited(lockout.retryAfterSeconds);

  const user = await db.user.findUnique({ where: { email } });
  let ok = false;
  if (user && !user.disabledAt) ok = await verifyPassword(password, user.passwordHash);
  else await dummyVerify(password);

  await db.loginAttempt.create({ data: { email, succeeded: ok, at: new Date(nowMs) } });
  // The failure is counted; the attempt after the 5th failure is the one answered with 429.
  if (!ok || !user) return { ok: false, reason: "invalid", message: LOGIN_INVALID_MESSAGE };
  return { ok: true, principal: { id: user.id, email: user.email, role: user.role as Role } };
}
