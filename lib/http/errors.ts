/**
 * The JSON error envelope of every Sluice HTTP API:
 * `{ "error": { "code": "invalid_policy", "message": "…", "field": "tiers[0].limits[3].window", "issues": [...] } }`.
 * Statuses come from the one table in lib/services/errors.ts. Unexpected errors answer 500 with a
 * generic message: a stack or an internal detail never reaches the client.
 */
import { isAuthError } from "../auth/require-role";
import type { PolicyIssue } from "../policy/policy-file";
import { SERVICE_ERROR_STATUS, ServiceError, type ServiceErrorCode } from "../services/errors";

export type ErrorCode = ServiceErrorCode | "internal" | "method_not_allowed";

export interface ErrorBody {
  error: { code: ErrorCode; message: string; field: string | null; issues?: PolicyIssue[] };
}

export function jsonError(
  status: number,
  code: ErrorCode,
  message: string,
  options: { field?: string | null; issues?: PolicyIssue[]; headers?: HeadersInit } = {},
): Response {
  const body: ErrorBody = { error: { code, message, field: options.field ?? null } };
  if (options.issues && options.issues.length > 0) body.error.issues = options.issues;
  return Response.json(body, { status, headers: options.headers });
}

/** Maps anything a handler threw to the envelope. */
export function errorResponse(error: unknown): Response {
  if (error instanceof HttpError) return error.response;
  if (error instanceof ServiceError) {
    return jsonError(SERVICE_ERROR_STATUS[error.code], error.code, error.message, { field: error.field, issues: error.issues });
  }
  if (isAuthError(error)) {
    return jsonError(error.status, error.status === 401 ? "unauthorized" : "forbidden", error.message);
  }
  console.error("sluice api: unexpected error", error);
  return jsonError(500, "internal", "internal error");
}

/** A ready response thrown from a helper (auth, body limits) to end the handler early. */
export class HttpError extends Error {
  constructor(readonly response: Response) {
    super(`HTTP ${response.status}`);
    this.name = "HttpError";
  }
}

/** Runs a handler body, turning every throw into the JSON envelope. */
export async function handle(fn: () => Promise<Response>): Promise<Response> {
  try {
    return await fn();
  } catch (error) {
    return errorResponse(error);
  }
}
