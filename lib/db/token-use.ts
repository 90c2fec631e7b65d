/** "Last used" of API tokens, written off the request path (decision servers: once a minute). */
import type { PrismaClient } from "../generated/prisma/client";

/** Moves lastUsedAt forward (never back) for the tokens with these sha256 hashes. */
export async function markTokensUsed(db: PrismaClient, tokenHashes: readonly string[], at: Date): Promise<void> {
  if (tokenHashes.length === 0) return;
  await db.apiToken.updateMany({
    where: { hash: { in: [...tokenHashes] }, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: at } }] },
    data: { lastUsedAt: at },
  });
}
