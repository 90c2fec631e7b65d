/**
 * Server-side sessions for signed-in users (docs/security.md "Sessions"). The session cookie is a
 * next-auth JWT; it names one UserSession row (`sid`), and a request is signed in only while that
 * row is unrevoked and unexpired and its user enabled. Signing out revokes the row, so a copy of
 * the cookie taken before (another tab, a stolen one) signs nobody in afterwards; before, the JWT
 * stayed valid for its whole 12 hours.
 *
 * Written with SQL so this code does not depend on the generated client knowing the table.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { PrismaClient } from "../generated/prisma/client";

/** A client or a transaction: what these statements need. */
type Sql = Pick<PrismaClient, "$executeRaw" | "$queryRaw">;
import type { Principal } from "./require-role";
import { ROLES } from "../policy/types";

/** How long a session lives from sign-in (also the JWT's maxAge). */
export const SESSION_MAX_AGE_S = 12 * 60 * 60;

/** Starts a session for `userId`; returns its id (the JWT's `sid`). */
export async function startSession(db: Sql, userId: string, nowMs: number): Promise<string> {
  const id = randomBytes(24).toString("base64url");
  await db.$executeRaw`INSERT INTO "UserSession" ("id", "userId", "createdAt", "expiresAt")
    VALUES (${id}, ${userId}, ${new Date(nowMs)}::timestamp(3), ${new Date(nowMs + SESSION_MAX_AGE_S * 1000)}::timestamp(3))`;
  return id;
}

/** Ends one session (sign-out). Ending it again, or an unknown id, changes nothing. */
export async function endSession(db: Sql, sessionId: string, nowMs: number): Promise<void> {
  await db.$executeRaw`UPDATE "UserSession" SET "revokedAt" = ${new Date(nowMs)}::timestamp(3) WHERE "id" = ${sessionId} AND "revokedAt" IS NULL`;
}

/** Ends every session of a user (a disabled account, a changed role). Returns how many. */
export async function endUserSessions(db: Sql, userId: string, nowMs: number): Promise<number> {
  return db.$executeRaw`UPDATE "UserSession" SET "revokedAt" = ${new Date(nowMs)}::timestamp(3) WHERE "userId" = ${userId} AND "revokedAt" IS NULL`;
}

const principalRow = z.object({ id: z.string(), email: z.string(), role: z.enum(ROLES) });

/** The signed-in principal of a session, or null: no such session, ended, expired, or the user disabled. */
export async function sessionPrincipal(
  db: Sql,
  claims: { userId: string | undefined; sessionId: string | undefined },
  nowMs: number,
): Promise<Principal | null> {
  if (!claims.userId || !claims.sessionId) return null;
  const rows = await db.$queryRaw<unknown[]>`
    SELECT u."id", u."email", u."role"::text AS "role" FROM "UserSession" s JOIN "User" u ON u."id" = s."userId"
    WHERE s."id" = ${claims.sessionId} AND s."userId" = ${claims.userId} AND s."revokedAt" IS NULL
      AND s."expiresAt" > ${new Date(nowMs)}::timestamp(3) AND u."disabledAt" IS NULL`;
  const row = rows[0];
  return row === undefined ? null : principalRow.parse(row);
}
