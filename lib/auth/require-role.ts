/**
 * Server-side authorization: every page, server action and route handler calls `requireRole`
 * itself — proxy.ts only redirects, and a header can skip it (CVE-2025-29927).
 */
import type { Role } from "../policy/types";
import { ACTION_LABELS, can, type Action } from "./permissions";

/** Whoever is acting: a signed-in user (session) or an admin token. */
export interface Principal {
  id: string;
  email: string;
  role: Role;
}

/** 401 when nobody is signed in, 403 when the role lacks the right. Carries its HTTP status. */
export class AuthError extends Error {
  constructor(
    readonly status: 401 | 403,
    message: string,
    readonly action?: Action,
  ) {
    super(message);
    this.name = "AuthError";
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

export function isAuthError(error: unknown): error is AuthError {
  return error instanceof AuthError;
}
