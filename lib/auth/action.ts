/**
 * The guard every server action runs first. A server action is a public POST endpoint: it
 * authorizes itself (never trusting proxy.ts), parses its input with zod, calls one service, and
 * maps the result with lib/errors.ts (ActionResult, actionResult: the one mapping).
 */
import { headers } from "next/headers";
import { actionFailure, type ActionResult, type FieldIssue } from "../errors";
import { issueInWords, plainMessage } from "../policy/plain-messages";
import { actionOriginRefusal } from "./origin";
import type { Action } from "./permissions";
import { AuthError, type Principal } from "./require-role";
import { authorize } from "./session";

export type { ActionResult, FieldIssue } from "../errors";

/**
 * Runs `fn` as `action`'s principal: refused (403) unless the request's Origin is this site, then
 * AuthError becomes a 401/403 result instead of a crash.
 */
export async function guardAction<T>(action: Action, fn: (principal: Principal) => Promise<ActionResult<T>>): Promise<ActionResult<T>> {
  // First, before the session: a request from another site (or with no Origin) is refused unread.
  const refusal = actionOriginRefusal(await headers());
  if (refusal) return refusal;
  let principal: Principal;
  try {
    principal = await authorize(action);
  } catch (error) {
    if (error instanceof AuthError) return actionFailure(error);
    throw error;
  }
  return fn(principal);
}

/** The audit actor string of a signed-in user. */
export function actorOf(principal: Principal): string {
  return `user:${principal.email}`;
}

/** Who edits the policy (lib/services/policy/edit-policy.ts): the audit actor and the role checked per field. */
export function editorOf(principal: Principal): { actor: string; role: Principal["role"] } {
  return { actor: actorOf(principal), role: principal.role };
}

/** zod's issues as field issues, each message in words (lib/plain-messages.ts). */
export function zodIssues(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): FieldIssue[] {
  return error.issues.map((i) => ({ path: i.path.map(String).join("."), message: plainMessage(i.message) }));
}

/** The result of an action whose input did not parse: what is wrong, naming the field. */
export function malformed(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): ActionResult<never> {
  const issues = zodIssues(error);
  return { ok: false, status: 400, message: issues.length ? `Not saved. ${issues.map((i) => issueInWords(i)).join("; ")}.` : "Not saved: the request was malformed.", issues };
}
