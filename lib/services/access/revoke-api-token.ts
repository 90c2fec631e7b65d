/**
 * Revoke a service, admin or tenant token (a tenant token leaves the Redis hash of read tokens at once). A revoked admin token answers 401 on its next call (the admin
 * API looks tokens up on every request); a service token leaves the decision API's Redis set at once.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { writeAudit } from "../../db/audit";
import { setServiceToken, setTenantToken, type RedisLike } from "../../redis/policy";
import { ServiceError } from "../errors";
import { writeEveryRegion } from "../policy/region-writes";

/** Revokes a token by id; a service token leaves the decision API's set at once. */
export async function revokeApiToken(
  deps: { db: PrismaClient; redis?: RedisLike | null },
  input: { id: string; nowMs?: number },
  actor: string,
): Promise<{ id: string; alreadyRevoked: boolean }> {
  const nowMs = input.nowMs ?? Date.now();
  return deps.db.$transaction(async (tx) => {
    const row = await tx.apiToken.findUnique({ where: { id: input.id } });
    if (!row) throw new ServiceError("not_found", "no such token", { field: "id" });
    if (row.revokedAt === null) {
      const revokedAt = new Date(nowMs);
      await tx.apiToken.update({ where: { id: row.id }, data: { revokedAt } });
      await writeAudit(tx, {
        actor, action: "token.revoke", entity: "token", entityId: row.id,
        before: { revokedAt: null }, after: { revokedAt: revokedAt.toISOString(), name: row.name, prefix: row.prefix, kind: row.kind },
      });
    }
    if (row.kind === "service" && deps.redis) await writeEveryRegion(tx, deps.redis, "removing the service token", (r) => setServiceToken(r, row.hash, false));
    if (row.kind === "tenant" && deps.redis) await writeEveryRegion(tx, deps.redis, "removing the tenant token", (r) => setTenantToken(r, row.hash, null));
    return { id: row.id, alreadyRevoked: row.revokedAt !== null };
  });
}
