/**
 * `sluice keys revoke` and the tenant page: revoke a tenant's key by name or display prefix. One
 * edit of the draft (under the policy lock, keys.manage checked, audited as key.revoke); the hash
 * leaves the Redis key index in the same transaction and is PUBLISHed on the keys channel, so every
 * decision server drops it from its cache: the next request with it is 401, without a publish.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { naturalKeys, type KeyState } from "../../policy/plan";
import { unindexApiKeys, type RedisLike } from "../../redis/policy";
import { editPolicy, tenantIn, type Editor } from "../policy/edit-policy";
import type { Tx } from "../../db/client";
import { ServiceError } from "../errors";
import { writeEveryRegion } from "../policy/region-writes";

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
  editor: Editor,
): Promise<RevokedApiKey> {
  if ((input.name === undefined) === (input.prefix === undefined)) {
    throw new ServiceError("invalid_request", "name: give exactly one of name or prefix", { field: "name" });
  }
  if (input.prefix !== undefined && input.prefix.length < 4) {
    throw new ServiceError("invalid_request", "prefix: at least 4 characters", { field: "prefix" });
  }
  let found: KeyState | undefined;
  const unindex = (db: PrismaClient | Tx) => writeEveryRegion(db, deps.redis!, "removing the key from the index", (r) => unindexApiKeys(r, [found!.hash!]));
  const result = await editPolicy(
    deps.db,
    (draft) => {
      tenantIn(draft, input.tenant);
      const own = draft.keys.filter((k) => k.tenant === input.tenant);
      const matches = input.name !== undefined ? own.filter((k) => k.name === input.name) : own.filter((k) => k.prefix?.startsWith(input.prefix!));
      if (matches.length > 1) {
        throw new ServiceError("conflict", `prefix ${input.prefix} matches ${matches.length} keys of ${input.tenant}; use --name`, { field: "prefix" });
      }
      found = matches[0] ? { ...matches[0] } : undefined;
      if (!found) throw new ServiceError("not_found", `tenant ${input.tenant} has no such key`, { field: input.name !== undefined ? "name" : "prefix" });
      if (matches[0].revoked) return null;
      matches[0].revoked = true;
      return draft;
    },
    editor,
    { nowMs: input.nowMs, afterWrite: async (tx) => void (deps.redis && (await unindex(tx))) },
  );
  // Already revoked: nothing to write, but make sure the index agrees (a failed earlier attempt, a restore).
  if (!result.applied && deps.redis) await unindex(deps.db);
  const key = found!;
  return { id: result.ids.key.get(naturalKeys.key(key.tenant, key.name)) ?? "", tenant: key.tenant, name: key.name, prefix: key.prefix ?? "", alreadyRevoked: !result.applied };
}
