/**
 * The worker's key expiry, every tick (5 s): an API key whose `expiresAt` has passed (a rotation's
 * overlap ended) is revoked as `sluice keys revoke` would (lib/services/access/revoke-api-key.ts: the draft,
 * the Redis key index and the eviction message, audited `key.revoke` by `system:key-expiry`). The
 * decision path itself never reads the expiry, so a key works until at most one tick after it.
 * Revoking is idempotent: several workers may run this at once.
 */
import type { Db } from "../db/client";
import type { RedisLike } from "../redis/policy";
import { revokeApiKey } from "../services/access/revoke-api-key";

export const KEY_EXPIRY_ACTOR = "system:key-expiry";

export async function expireApiKeys(deps: { db: Db; redis: RedisLike | null }, { nowMs }: { nowMs: number }): Promise<{ tenant: string; name: string }[]> {
  const due = await deps.db.apiKey.findMany({
    where: { revokedAt: null, expiresAt: { lte: new Date(nowMs) } },
    select: { name: true, tenant: { select: { slug: true } } },
    orderBy: { expiresAt: "asc" },
    take: 100,
  });
  const revoked: { tenant: string; name: string }[] = [];
  for (const key of due) {
    await revokeApiKey(deps, { tenant: key.tenant.slug, name: key.name, nowMs }, { actor: KEY_EXPIRY_ACTOR, role: "admin" });
    revoked.push({ tenant: key.tenant.slug, name: key.name });
  }
  return revoked;
}
