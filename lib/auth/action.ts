/**
 * The shape every server action answers with, and the guard every one of them runs first.
 * A server action is a public POST endpoint: it authorizes itself (never trusting proxy.ts),
 * parses its input with zod, calls one service, and maps the result.
 */
import type { Action } from "./permissions";
import { AuthError, type Principal } from "./require-role";
import { authorize } from "./session";

export interface FieldIssue {
  /** Dotted path in the submitted object, e.g. `limits.3.window`; "" for the whole form. */
  path: string;
  message: string;
}

export type ActionResult<T = undefined> =
  | { ok: true; message?: string; data?: T }
  | { ok: false; status: 400 | 401 | 403 | 404 | 409 | 500; message: string; issues?: FieldIssue[] };

/** Runs `fn` as `action`'s principal; AuthError becomes a 401/403 result instead of a crash. */
export async function guardAction<T>(action: Action, fn: (principal: Principal) => Promise<ActionResult<T>>): Promise<ActionResult<T>> {
  let principal: Principal;
  try {
    principal = await authorize(action);
  } catch (error) {
    if (error instanceof AuthError) return { ok: false, status: error.status, message: error.message };
    throw error;
  }
  return fn(principal);
}

/** The audit actor string of a signed-in user. */
export function actorOf(principal: Principal): string {
  return `user:${principal.email}`;
}

export function zodIssues(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): FieldIssue[] {
  return error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
}
