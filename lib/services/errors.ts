/**
 * Failures a use case reports to its caller (CLI, route handler, server action): a stable code, a
 * message for humans, the failing field and, for policy validation, every issue with its path.
 * The HTTP status of each code lives here too, so every adapter maps them the same way.
 */
import type { PolicyIssue } from "../policy/policy-file";

export const SERVICE_ERROR_STATUS = {
  invalid_request: 400,
  invalid_policy: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  store_unavailable: 503,
} as const;
export type ServiceErrorCode = keyof typeof SERVICE_ERROR_STATUS;

export class ServiceError extends Error {
  readonly code: ServiceErrorCode;
  readonly field: string | null;
  readonly issues: PolicyIssue[];

  constructor(code: ServiceErrorCode, message: string, options: { field?: string | null; issues?: PolicyIssue[] } = {}) {
    super(message);
    this.name = "ServiceError";
    this.code = code;
    this.field = options.field ?? options.issues?.[0]?.path ?? null;
    this.issues = options.issues ?? [];
  }

  get status(): number {
    return SERVICE_ERROR_STATUS[this.code];
  }
}

/** An invalid policy: the message is the first issue (`tiers[0].limits[3].window: expected …`). */
export function invalidPolicy(issues: PolicyIssue[]): ServiceError {
  const first = issues[0];
  const message = first ? (first.path ? `${first.path}: ${first.message}` : first.message) : "invalid policy";
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : "";
  return new ServiceError("invalid_policy", message + more, { issues });
}

/** Runs a Redis write; a failure becomes store_unavailable (503) naming what was being done. */
export async function redisStep<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new ServiceError("store_unavailable", `Redis is unavailable (${what}): ${reason}; nothing was changed`);
  }
}
