/**
 * `sluice keys create` and the tenant page: issue an API key for a tenant. The plaintext is
 * returned once and never stored (only its SHA-256 and a display prefix). The key is added to the
 * live Redis key index at once, so it works without waiting for a publish.
 */
import { z } from "zod";
import type { PrismaClient } from "../generated/prisma/client";
import { writeAudit } from "../db/audit";
import { findTenantBySlug, newId } from "../db/policy-repo";
import { indexApiKey, type RedisLike } from "../redis/policy";
import { redisStep, ServiceError } from "./errors";
import { displayPrefix, generateSecret, hashSecret } from "./secrets";

const inputSchema = z.strictObject({
  tenant: z.string().min(1).max(63),
  name: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "expected lowercase letters, digits, - and _ (at most 63)")
    .optional(),
});

export interface CreatedApiKey {
  id: string;
  tenant: string;
  name: string;
  prefix: string;
  /** The plaintext: show it once, it cannot be recovered. */
  key: string;
}

export async function createApiKey(
  deps: { db: PrismaClient; redis?: RedisLike | null },
  input: { tenant: string; name?: string },
  actor: string,
): Promise<CreatedApiKey> {
  const parsed = inputSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ServiceError("invalid_request", `${String(issue.path[0])}: ${issue.message}`, { field: String(issue.path[0]) });
  }
  const key = generateSecret("sk_live");
  const hash = hashSecret(key);
  const prefix = displayPrefix(key);
  return deps.db.$transaction(async (tx) => {
    const tenant = await findTenantBySlug(tx, parsed.data.tenant);
    if (!tenant) throw new ServiceError("not_found", `no tenant ${JSON.stringify(parsed.data.tenant)}`, { field: "tenant" });
    const name = parsed.data.name ?? `key-${key.slice(-6).toLowerCase()}`;
    const taken = await tx.apiKey.findFirst({ where: { tenantId: tenant.id, name }, select: { id: true } });
    if (taken) throw new ServiceError("conflict", `tenant ${tenant.slug} already has a key named ${name}`, { field: "name" });
    const id = newId("apiKey");
    await tx.apiKey.create({ data: { id, tenantId: tenant.id, name, hash, prefix } });
    await writeAudit(tx, { actor, action: "key.create", entity: "key", entityId: id, after: { tenant: tenant.slug, name, prefix } });
    // Inside the transaction: if Redis refuses, the key is not created at all.
    if (deps.redis) await redisStep("indexing the key", () => indexApiKey(deps.redis!, hash, tenant.slug));
    return { id, tenant: tenant.slug, name, prefix, key };
  });
}
