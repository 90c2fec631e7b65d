/**
 * `sluice keys create` and the tenant page: issue an API key for a tenant. The plaintext is
 * returned once and never stored (only its SHA-256 and a display prefix). One edit of the draft
 * (under the policy lock, with the keys.manage check and its audit entry), and the key is added to
 * the live Redis key index in the same transaction, so it works without waiting for a publish.
 */
import { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client";
import type { Tx } from "../../db/client";
import { naturalKeys } from "../../policy/plan";
import { indexApiKey, type RedisLike } from "../../redis/policy";
import { editPolicy, tenantIn, type Editor } from "../policy/edit-policy";
import { ServiceError } from "../errors";
import { writeEveryRegion } from "../policy/region-writes";
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

/**
 * `afterCreate` runs in the same transaction with the new key's id (a rotation links the two keys
 * there); a throw creates nothing.
 */
export async function createApiKey(
  deps: { db: PrismaClient; redis?: RedisLike | null },
  input: { tenant: string; name?: string },
  editor: Editor,
  options: { afterCreate?: (tx: Tx, keyId: string) => Promise<void> } = {},
): Promise<CreatedApiKey> {
  const parsed = inputSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ServiceError("invalid_request", `${String(issue.path[0])}: ${issue.message}`, { field: String(issue.path[0]) });
  }
  const key = generateSecret("sk_live");
  const hash = hashSecret(key);
  const prefix = displayPrefix(key);
  const tenant = parsed.data.tenant;
  const name = parsed.data.name ?? `key-${key.slice(-6).toLowerCase()}`;
  const result = await editPolicy(
    deps.db,
    (draft) => {
      tenantIn(draft, tenant);
      if (draft.keys.some((k) => k.tenant === tenant && k.name === name)) {
        throw new ServiceError("conflict", `tenant ${tenant} already has a key named ${name}`, { field: "name" });
      }
      draft.keys.push({ tenant, name, hash, prefix, revoked: false });
      return draft;
    },
    editor,
    {
      afterWrite: async (tx, written) => {
        await options.afterCreate?.(tx, written.ids.key.get(naturalKeys.key(tenant, name)) ?? "");
        // Inside the transaction: if Redis refuses (every region's, with SLUICE_REGIONS), the key is not created at all.
        if (deps.redis) await writeEveryRegion(tx, deps.redis, "indexing the key", (r) => indexApiKey(r, hash, tenant));
      },
    },
  );
  return { id: result.ids.key.get(naturalKeys.key(tenant, name)) ?? "", tenant, name, prefix, key };
}
