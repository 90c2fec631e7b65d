/**
 * `sluice tokens create` and the settings page: bearer tokens for machines. `service` tokens let
 * gateways call the decision API; `admin` tokens call the admin REST API with the token's role.
 * `tenant` tokens read one tenant's usage (`GET /v1/usage` on the decision server) and can make no
 * decision: they go to their own Redis hash, never to the service-token set.
 * Stored as SHA-256 with a display prefix; the plaintext is returned once. A service token is added
 * to the Redis set the decision API checks right away.
 */
import { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client";
import { writeAudit } from "../../db/audit";
import { newId } from "../../db/policy-repo";
import { issueInWords } from "../../policy/plain-messages";
import { ROLES, type Role } from "../../policy/types";
import { setServiceToken, setTenantToken, type RedisLike } from "../../redis/policy";
import { ServiceError } from "../errors";
import { writeEveryRegion } from "../policy/region-writes";
import { displayPrefix, generateSecret, hashSecret } from "./secrets";

const inputSchema = z
  .strictObject({
    kind: z.enum(["service", "admin", "tenant"], "expected service, admin or tenant"),
    /** Absent: a generated one (the CLI without --name); given, it must say something. */
    name: z.string().trim().min(1, "enter a name for the token").max(100, "at most 100 characters").optional(),
    role: z.enum(ROLES, `expected one of ${ROLES.join(", ")}`).optional(),
    /** The one tenant a `tenant` token may read (its usage, never a decision). */
    tenant: z.string().min(1).max(63).optional(),
  })
  .superRefine((v, ctx) => {
    if (v.kind === "tenant" && v.tenant === undefined) ctx.addIssue({ code: "custom", path: ["tenant"], message: "required for a tenant token" });
    if (v.kind !== "tenant" && v.tenant !== undefined) ctx.addIssue({ code: "custom", path: ["tenant"], message: "only for a tenant token" });
    if (v.kind !== "admin" && v.role !== undefined) ctx.addIssue({ code: "custom", path: ["role"], message: "only for an admin token (a service or tenant token has no role)" });
  });

export interface CreatedApiToken {
  id: string;
  kind: "service" | "admin" | "tenant";
  /** The tenant of a tenant token; null otherwise. */
  tenant: string | null;
  name: string;
  role: Role;
  prefix: string;
  /** The plaintext: show it once. */
  token: string;
}

export const TOKEN_KIND_PREFIX = { service: "sl_svc", admin: "sl_adm", tenant: "sl_ten" } as const;

export async function createApiToken(
  deps: { db: PrismaClient; redis?: RedisLike | null },
  input: { kind: string; name?: string; role?: string; tenant?: string },
  actor: string,
): Promise<CreatedApiToken> {
  const parsed = inputSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = String(issue.path[0] ?? "");
    throw new ServiceError("invalid_request", issueInWords({ path: field, message: issue.message }), { field });
  }
  const { kind } = parsed.data;
  const tenant = parsed.data.tenant ?? null;
  // Only an admin token acts with a role. The column needs one for the others: the one that says the
  // least, never shown or audited (a service token calls the decision API only, a tenant token reads usage).
  const role: Role = kind === "admin" ? (parsed.data.role ?? "admin") : "billing";
  const token = generateSecret(TOKEN_KIND_PREFIX[kind]);
  const hash = hashSecret(token);
  const prefix = displayPrefix(token);
  const name = parsed.data.name ?? `${tenant ?? kind}-${token.slice(-6).toLowerCase()}`;
  const id = newId("apiToken");
  await deps.db.$transaction(async (tx) => {
    if (tenant !== null && !(await tx.tenant.findUnique({ where: { slug: tenant }, select: { id: true } }))) {
      throw new ServiceError("not_found", `tenant: no tenant ${JSON.stringify(tenant)}`, { field: "tenant" });
    }
    await tx.apiToken.create({ data: { id, kind, tenant, name, hash, prefix, role, createdBy: actor } });
    await writeAudit(tx, { actor, action: "token.create", entity: "token", entityId: id, after: { kind, name, ...(kind === "admin" ? { role } : {}), prefix, ...(tenant ? { tenant } : {}) } });
    if (kind === "service" && deps.redis) await writeEveryRegion(tx, deps.redis, "adding the service token", (r) => setServiceToken(r, hash, true));
    if (kind === "tenant" && deps.redis) await writeEveryRegion(tx, deps.redis, "adding the tenant token", (r) => setTenantToken(r, hash, tenant));
  });
  return { id, kind, tenant, name, role, prefix, token };
}

/** Kept here too: app/settings/actions.ts imports it from this module. */
export { revokeApiToken } from "./revoke-api-token";
