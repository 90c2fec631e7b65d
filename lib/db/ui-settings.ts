/** Reads for the settings page: users, tokens (by prefix, never the secret), the default failure mode. */
import type { PrismaClient } from "../generated/prisma/client";

export async function listUsers(db: PrismaClient) {
  return db.user.findMany({
    orderBy: { email: "asc" },
    select: { id: true, email: true, name: true, role: true, createdAt: true, disabledAt: true },
  });
}

export async function listApiTokens(db: PrismaClient) {
  return db.apiToken.findMany({
    orderBy: [{ revokedAt: { sort: "desc", nulls: "first" } }, { createdAt: "desc" }],
    select: { id: true, kind: true, name: true, prefix: true, role: true, createdBy: true, createdAt: true, lastUsedAt: true, revokedAt: true },
  });
}

export async function readDefaultFailureMode(db: PrismaClient): Promise<string> {
  const row = await db.policySettings.findUnique({ where: { id: 1 } });
  return row?.defaultFailureMode ?? "open";
}
