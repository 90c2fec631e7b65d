/**
 * `sluice tokens create` and the settings page: bearer tokens for machines. `service` tokens let
 * gateways call the decision API; `admin` tokens call the admin REST API with the token's role.
 * Stored as SHA-256 with a display prefix; the plaintext is returned once. A service token is added
 * to the Redis set the decision API checks right away.
 */
import { z } from "zod";
import type { PrismaClient } from "../generated/prisma/client";
import { writeAudit } from "../db/audit";
import { newId } from "../db/policy-repo";
import { ROLES, type Role } from "../policy/types";
import { setServiceToken, type RedisLike } from "../redis/policy";
import { redisStep, ServiceError } from "./errors";
import { displayPrefix, generateSecret, hashSecret } from "./secrets";

const inputSchema = z.strictObject({
  kind: z.enum(["service", "admin"], "expected service or admin"),
  name: z.string().trim().min(1).max(100).optional(),
  role: z.enum(ROLES, `expected one of ${ROLES.join(", ")}`).optional(),
});

export interface CreatedApiToken {
  id: string;
  kind: "service" | "admin";
  name: string;
  role: Role;
  prefix: string;
  /** The plaintext: show it once. */
  token: string;
}

export const TOKEN_KIND_PREFIX = { service: "sl_svc", admin: "sl_adm" } as const;

export async function createApiToken(
  deps: { db: PrismaClient; redis?: RedisLike | null },
  input: { kind: string; name?: string; role?: string },
  actor: string,
): Promise<CreatedApiToken> {
  const parsed = inputSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ServiceError("invalid_request", `${String(issue.path[0])}: ${issue.message}`, { field: String(issue.path[0]) });
  }
  const { kind } = parsed.data;
  const role: Role = parsed.data.role ?? "admin";
  const token = generateSecret(TOKEN_KIND_PREFIX[kind]);
  const hash = hashSecret(token);
  const prefix = displayPrefix(token);
  const name = parsed.data.name ?? `${kind}-${token.slice(-6).toLowerCase()}`;
  const id = newId("apiToken");
  await deps.db.$transaction(async (tx) => {
    await tx.apiToken.create({ data: { id, kind, name, hash, prefix, role, createdBy: actor } });
    await writeAudit(tx, { actor, action: "token.create", entity: "token", entityId: id, after: { kind, name, role, prefix } });
    if (kind === "service" && deps.redis) await redisStep("adding the service token", () => setServiceToken(deps.redis!, hash, true));
  });
  return { id, kind, name, role, prefix, token };
}

/** Kept here too: app/settings/actions.ts imports it from this module. */
export { revokeApiToken } from "./revoke-api-token";
