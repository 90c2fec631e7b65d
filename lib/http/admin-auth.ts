/**
 * The one check of who is calling a control-plane route handler (admin REST API, usage, quotas,
 * billing exports), and whether they may. `Authorization: Bearer <admin token>` (at most
 * ADMIN_TOKEN_MAX_LENGTH characters) is looked up by its SHA-256 among unrevoked admin tokens (401
 * when absent or wrong), then the token's role is checked against the action (403). A browser
 * session (next-auth cookie) is accepted too, with an Origin check on every non-GET request, since
 * a cookie rides along on cross-site POSTs.
 */
import { createHash } from "node:crypto";
import type { PrismaClient } from "../generated/prisma/client";
import { ServiceError } from "../errors";
import { bearerToken } from "../auth/bearer";
import { sameOrigin } from "../auth/origin";
import { ACTION_LABELS, can, type Action } from "../auth/permissions";
import type { Role } from "../policy/types";

export { sameOrigin } from "../auth/origin";

export interface AdminCaller {
  /** For the audit log: `token:<prefix>` or `user:<email>`. */
  actor: string;
  role: Role;
}

/** Tokens are 40-odd characters; anything far longer is not one, and is not hashed. */
export const ADMIN_TOKEN_MAX_LENGTH = 256;

const SESSION_COOKIE = /(?:^|;\s*)(?:__Secure-)?next-auth\.session-token(?:\.\d+)?=/;

const unauthorized = (message: string) =>
  new ServiceError("unauthorized", message, { headers: { "WWW-Authenticate": 'Bearer realm="sluice"' } });

/** The bearer token; "" for an Authorization header that is not one (refused, not taken for a session); null without the header. */
function bearer(request: Request): string | null {
  const header = request.headers.get("authorization");
  if (!header) return null;
  return bearerToken(header) ?? "";
}

export async function authenticateAdmin(request: Request, db: PrismaClient, action: Action): Promise<AdminCaller> {
  const token = bearer(request);
  let caller: AdminCaller;
  if (token !== null) {
    if (token === "" || token.length > ADMIN_TOKEN_MAX_LENGTH) throw unauthorized("expected Authorization: Bearer <admin token>");
    const hash = createHash("sha256").update(token, "utf8").digest("hex");
    const row = await db.apiToken.findUnique({ where: { hash }, select: { id: true, kind: true, role: true, prefix: true, revokedAt: true } });
    if (!row || row.kind !== "admin" || row.revokedAt !== null) throw unauthorized("unknown or revoked admin token");
    caller = { actor: `token:${row.prefix}`, role: row.role as Role };
    // Best effort, off the request's critical path.
    db.apiToken.update({ where: { id: row.id }, data: { lastUsedAt: new Date() } }).catch(() => undefined);
  } else if (SESSION_COOKIE.test(request.headers.get("cookie") ?? "")) {
    if (!sameOrigin(request)) throw new ServiceError("forbidden", "cross-origin request refused");
    const { currentPrincipal } = await import("../auth/session");
    const principal = await currentPrincipal();
    if (!principal) throw unauthorized("sign in, or send Authorization: Bearer <admin token>");
    caller = { actor: `user:${principal.email}`, role: principal.role };
  } else {
    throw unauthorized("expected Authorization: Bearer <admin token>");
  }
  if (!can(caller.role, action)) {
    throw new ServiceError("forbidden", `the ${caller.role} role may not ${ACTION_LABELS[action]}`);
  }
  return caller;
}

