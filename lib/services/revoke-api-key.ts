/**
 * `sluice keys revoke` and the tenant page: revoke a tenant's key by name or display prefix. The
 * hash leaves the Redis key index at once and is PUBLISHed on the keys channel, so every decision
 * server drops it from its cache: the next request with it is 401, without waiting for a publish.
 */
import type { PrismaClient } from "../generated/prisma/client";
import { writeAudit } from "../db/audit";
import { findTenantBySlug, findTenantKeyByName, findTenantKeysByPrefix } from "../db/policy-repo";
import { unindexApiKeys, type RedisLike } from "../redis/policy";
import { redisStep, ServiceError } from "./errors";

export interface RevokedApiKey {
  id: string;
  tenant: string;
  name: string;
  prefix: string;
  /** True when it had been revoked before (revoking is idempotent). */
  alreadyRevoked: boolean;
}

export async function revokeApiKey(
  deps: { db: PrismaClient; redis?: RedisLike | null },
  input: { tenant: string; name?: string; prefix?: string; nowMs?: number },
  actor: string,
): Promise<RevokedApiKey> {
  if ((input.name === undefined) === (input.prefix === undefined)) {
    throw new ServiceError("invalid_request", "name: give exactly one of name or prefix", { field: "name" });
  }
  const nowMs = input.nowMs ?? Date.now();
  return deps.db.$transaction(async (tx) => {
    const tenant = await findTenantBySlug(tx, input.tenant);
    if (!tenant) throw new ServiceError("not_found", `no tenant ${JSON.stringify(input.tenant)}`, { field: "tenant" });
    let key;
    if (input.name !== undefined) {
      key = await findTenantKeyByName(tx, { tenantId: tenant.id, name: input.name });
    } else {
      if (input.prefix!.length < 4) throw new ServiceError("invalid_request", "prefix: at least 4 characters", { field: "prefix" });
      const found = await findTenantKeysByPrefix(tx, { tenantId: tenant.id, prefix: input.prefix! });
      if (found.length > 1) {
        throw new ServiceError("conflict", `prefix ${input.prefix} matches ${found.length} keys of ${tenant.slug}; use --name`, { field: "prefix" });
      }
      key = found[0];
    }
    if (!key) throw new ServiceError("not_found", `tenant ${tenant.slug} has no such key`, { field: input.name !== undefined ? "name" : "prefix" });
    const alreadyRevoked = key.revokedAt !== null;
    if (!alreadyRevoked) {
      const revokedAt = new Date(nowMs);
      await tx.apiKey.updateMany({ where: { id: key.id, tenantId: tenant.id }, data: { revokedAt } });
      await writeAudit(tx, {
        actor,
        action: "key.revoke",
        entity: "key",
        entityId: key.id,
        before: { tenant: tenant.slug, name: key.name, prefix: key.prefix, revokedAt: null },
        after: { tenant: tenant.slug, name: key.name, prefix: key.prefix, revokedAt: revokedAt.toISOString() },
      });
    }
    // Even when already revoked: make sure the index agrees (a failed earlier attempt, a restore).
    if (deps.redis) await redisStep("removing the key from the index", () => unindexApiKeys(deps.redis!, [key.hash]));
    return { id: key.id, tenant: tenant.slug, name: key.name, prefix: key.prefix, alreadyRevoked };
  });
}
