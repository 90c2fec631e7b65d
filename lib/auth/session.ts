/**
 * The signed-in principal, for server components, server actions and route handlers.
 * The JWT only says who signed in and which server-side session; the session's state (signed out,
 * expired), the role and the disabled flag are re-read on every request, so signing out, a role
 * change or a disabled account takes effect immediately.
 */
import { getServerSession } from "next-auth/next";
import { redirect } from "next/navigation";
import { db } from "../db/client";
import { sessionPrincipal } from "./user-sessions";
import { authOptions } from "./options";
import { can, type Action } from "./permissions";
import { AuthError, requireRole, type Principal } from "./require-role";

export async function currentPrincipal(): Promise<Principal | null> {
  const session = await getServerSession(authOptions());
  return sessionPrincipal(db(), { userId: session?.user?.id, sessionId: session?.sid }, Date.now());
}

/** For server actions and route handlers: the principal, or AuthError (401 / 403). */
export async function authorize(action: Action): Promise<Principal> {
  return requireRole(await currentPrincipal(), action);
}

/**
 * For pages: anonymous users go to /login; a signed-in user lacking the right gets `forbidden`
 * (the page renders a 403 notice instead of the data).
 */
export async function pageAccess(action: Action, path: string): Promise<{ principal: Principal; allowed: boolean }> {
  const principal = await currentPrincipal();
  if (!principal) redirect(`/login?callbackUrl=${encodeURIComponent(path)}`);
  return { principal, allowed: can(principal.role, action) };
}

export { AuthError };
