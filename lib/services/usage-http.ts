/**
 * Route-handler plumbing shared by the usage, quotas and billing endpoints: who is calling (an admin
 * bearer token, stored as SHA-256, or a next-auth session), the role check, zod query parsing with
 * 400s that name the field, and the JSON error envelope `{ error: { code, message, field? } }`.
 */
import { createHash } from "node:crypto";
import type { z } from "zod";
import { db } from "../db/client";
import type { Action } from "../auth/permissions";
import { AuthError, requireRole, type Principal } from "../auth/require-role";
import type { Role } from "../policy/types";

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

export function errorResponse(status: number, code: string, message: string, field?: string): Response {
  return Response.json({ error: { code, message, ...(field ? { field } : {}) } }, { status, headers: { "cache-control": "no-store" } });
}

/** The principal behind an `Authorization: Bearer <admin token>` header, or null when there is none. */
async function tokenPrincipal(request: Request): Promise<Principal | null | "invalid"> {
  const header = request.headers.get("authorization");
  if (!header) return null;
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  if (!match) return "invalid";
  const hash = createHash("sha256").update(match[1]!).digest("hex");
  const token = await db().apiToken.findUnique({ where: { hash } });
  if (!token || token.kind !== "admin" || token.revokedAt) return "invalid";
  await db().apiToken.update({ where: { id: token.id }, data: { lastUsedAt: new Date() } }).catch(() => undefined);
  return { id: token.id, email: `token:${token.prefix}`, role: token.role as Role };
}

export async function authenticate(request: Request, action: Action): Promise<Principal> {
  const fromToken = await tokenPrincipal(request);
  if (fromToken === "invalid") throw new AuthError(401, "The bearer token is not a valid admin token.", action);
  if (fromToken) return requireRole(fromToken, action);
  const { currentPrincipal } = await import("../auth/session");
  // Outside a Next.js request (scripts, tests) there is no session to read: anonymous.
  const principal = await currentPrincipal().catch(() => null);
  return requireRole(principal, action);
}

export function parseQuery<S extends z.ZodType>(schema: S, url: URL): z.infer<S> {
  const raw: Record<string, string> = {};
  for (const [k, v] of url.searchParams) raw[k] = v;
  const result = schema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const field = issue.path.map(String).join(".") || "query";
    throw new HttpError(400, "invalid_request", `${field}: ${issue.message}`, field);
  }
  return result.data;
}

/** Runs a handler body, mapping auth and validation errors to the envelope; other errors are 500 without a stack. */
export async function handle(fn: () => Promise<Response>): Promise<Response> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof AuthError) return errorResponse(error.status, error.status === 401 ? "unauthorized" : "forbidden", error.message);
    if (error instanceof HttpError) return errorResponse(error.status, error.code, error.message, error.field);
    console.error("usage api error", error);
    return errorResponse(500, "internal", "Something went wrong; the cause was logged.");
  }
}
