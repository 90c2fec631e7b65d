/**
 * Server-side authorization: every page, server action and route handler calls `requireRole`
 * itself — proxy.ts only redirects, and a header can skip it (CVE-2025-29927).
 */
import { ServiceError } from "../errors";
import type { Role } from "../policy/types";
import { ACTION_LABELS, can, type Action } from "./permissions";

/** Whoever is acting: a signed-in user (session) or an admin token. */
export interface Principal {
  id: string;
  email: string;
  role: Role;
}

/** 401 when nobody is signed in, 403 when the role lacks the right: a ServiceError like any other. */
export class AuthError extends ServiceError {
  constructor(
    status: 401 | 403,
    message: string,
    readonly action?: Action,
    headers?: Record<string, string>,
  ) {
    super(status === 401 ? "unauthorized" : "forbidden", message, { headers });
    this.name = "AuthError";
  }

  override get status(): 401 | 403 {
    return this.code === "unauthorized" ? 401 : 403;
  }
}

/** Returns the principal when it may perform `action`, else throws AuthError (401 / 403). */
export function requireRole(principal: Principal | null | undefined, action: Action): Principal {
  if (!principal) throw new AuthError(401, "Sign in first.", action);
  if (!can(principal.role, action)) {
    throw new AuthError(403, `The ${principal.role} role may not ${ACTION_LABELS[action]}.`, action);
  }
  return principal;
}
