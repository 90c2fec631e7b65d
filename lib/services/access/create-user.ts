/**
 * Users of the control plane: create one (password hashed with bcrypt cost 12), change a role,
 * disable one. Each change writes its audit entry in the same transaction.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { endUserSessions } from "../../auth/user-sessions";
import type { PrismaClient } from "../../generated/prisma/client";
import { hashPassword, PASSWORD_MIN_LENGTH } from "../../auth/password";
import { ROLES, type Role } from "../../policy/types";

export const createUserInputSchema = z.strictObject({
  email: z.string().trim().toLowerCase().email("expected an email address").max(320),
  name: z.string().trim().max(200).optional(),
  password: z.string().min(PASSWORD_MIN_LENGTH, `at least ${PASSWORD_MIN_LENGTH} characters`).max(1024),
  role: z.enum(ROLES, `expected one of ${ROLES.join(", ")}`),
});
export type CreateUserInput = z.input<typeof createUserInputSchema>;

export interface UserSummary {
  id: string;
  email: string;
  name: string | null;
  role: Role;
  createdAt: Date;
  disabledAt: Date | null;
}

export type CreateUserResult =
  | { ok: true; user: UserSummary }
  | { ok: false; field: string; message: string };

function newUserId(): string {
  return `usr_${randomBytes(10).toString("hex")}`;
}

function summary(u: { id: string; email: string; name: string | null; role: string; createdAt: Date; disabledAt: Date | null }): UserSummary {
  return { id: u.id, email: u.email, name: u.name, role: u.role as Role, createdAt: u.createdAt, disabledAt: u.disabledAt };
}

/** Creates a user; an email already taken is a field error, not an exception. */
export async function createUser(db: PrismaClient, input: unknown, actor: string): Promise<CreateUserResult> {
  const parsed = createUserInputSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, field: String(issue.path[0] ?? "email"), message: issue.message };
  }
  const { email, name, password, role } = parsed.data;
  const passwordHash = await hashPassword(password);
  return db.$transaction(async (tx) => {
    const existing = await tx.user.findUnique({ where: { email }, select: { id: true } });
    if (existing) return { ok: false as const, field: "email", message: "a user with this email already exists" };
    const user = await tx.user.create({ data: { id: newUserId(), email, name: name || null, passwordHash, role } });
    await tx.auditEntry.create({
      data: { actor, action: "user.create", entity: "user", entityId: user.id, after: { email, name: name ?? null, role } },
    });
    return { ok: true as const, user: summary(user) };
  });
}

/** Changes a user's role. Returns null when no such user. */
export async function setUserRole(db: PrismaClient, input: { userId: string; role: Role }, actor: string): Promise<UserSummary | null> {
  const role = z.enum(ROLES).parse(input.role);
  return db.$transaction(async (tx) => {
    const before = await tx.user.findUnique({ where: { id: input.userId } });
    if (!before) return null;
    const user = await tx.user.update({ where: { id: before.id }, data: { role } });
    await tx.auditEntry.create({
      data: { actor, action: "user.set_role", entity: "user", entityId: user.id, before: { role: before.role }, after: { role } },
    });
    return summary(user);
  });
}

/** Disables (or re-enables) a user; a disabled user cannot sign in. */
export async function setUserDisabled(
  db: PrismaClient,
  input: { userId: string; disabled: boolean },
  actor: string,
  nowMs: number,
): Promise<UserSummary | null> {
  return db.$transaction(async (tx) => {
    const before = await tx.user.findUnique({ where: { id: input.userId } });
    if (!before) return null;
    const disabledAt = input.disabled ? new Date(nowMs) : null;
    const user = await tx.user.update({ where: { id: before.id }, data: { disabledAt } });
    // Re-enabling must not bring back the sessions open when the account was disabled.
    if (input.disabled) await endUserSessions(tx, user.id, nowMs);
    await tx.auditEntry.create({
      data: {
        actor,
        action: input.disabled ? "user.disable" : "user.enable",
        entity: "user",
        entityId: user.id,
        before: { disabledAt: before.disabledAt?.toISOString() ?? null },
        after: { disabledAt: disabledAt?.toISOString() ?? null },
      },
    });
    return summary(user);
  });
}
