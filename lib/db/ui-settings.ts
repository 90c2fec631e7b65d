/** Reads for the settings page: users (tokens: lib/services/access/api-token-use.ts). */
import type { PrismaClient } from "../generated/prisma/client";

export async function listUsers(db: PrismaClient) {
  return db.user.findMany({
    orderBy: { email: "asc" },
    select: { id: true, email: true, name: true, role: true, createdAt: true, disabledAt: true },
  });
}
