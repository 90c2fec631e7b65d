/**
 * Route handlers' side of the error envelope (lib/errors.ts): any throw becomes the JSON envelope
 * with the status of its code. Unexpected errors answer 500 with a generic message: a stack or an
 * internal detail never reaches the client.
 */
import { errorBody, ERROR_STATUS, ServiceError, type ErrorCode } from "../errors";
import type { PolicyIssue } from "../policy/policy-file";

export { ServiceError } from "../errors";

/** The envelope as a Response (never cached: an error is about this request). */
export function jsonError(
  code: ErrorCode,
  message: string,
  options: { field?: string | null; issues?: readonly PolicyIssue[]; headers?: Record<string, string> } = {},
): Response {
  return Response.json(errorBody(code, message, options), {
    status: ERROR_STATUS[code],
    headers: { "Cache-Control": "no-store", ...options.headers },
  });
}

/** Maps anything a handler threw to the envelope. */
export function errorResponse(error: unknown): Response {
  if (error instanceof ServiceError) {
    if (error.status >= 500 && error.cause !== undefined) console.error(`sluice api: ${error.message}`, error.cause);
    return jsonError(error.code, error.message, { field: error.field, issues: error.issues, headers: error.headers });
  }
  console.error("sluice api: unexpected error", error);
  return jsonError("internal", "internal error");
}

/** Runs a handler body, turning every throw into the JSON envelope. */
export async function handle(fn: () => Promise<Response>): Promise<Response> {
  try {
    return await fn();
  } catch (error) {
    return errorResponse(error);
  }
}

/** A 400 naming the first failing field of a zod result (query strings, JSON bodies). */
export function invalidRequest(issues: readonly { path: readonly PropertyKey[]; message: string }[], fallbackField: string): ServiceError {
  const issue = issues[0];
  const field = issue?.path.map(String).join(".") || fallbackField;
  return new ServiceError("invalid_request", `${field}: ${issue?.message ?? "invalid"}`, { field });
}
