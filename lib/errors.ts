/**
 * The one error vocabulary of every Sluice surface: the code → HTTP status table, the JSON envelope
 * every API answers errors with, the error use cases throw, and the result every server action
 * answers with. Imports nothing (types aside), so the decision server, route handlers, server
 * actions and client components all use this one file.
 *
 * The envelope, everywhere (decision API, admin REST API, usage API):
 *   { "error": { "code": "invalid_policy", "message": "tiers[0].limits[3].window: expected …",
 *                "field": "tiers[0].limits[3].window", "issues": [{ "path": …, "message": … }] } }
 * `field` is always present: the failing field, or null when the error is about no single field.
 * `issues` is present only when there is more than one thing to say (policy validation).
 */
import type { PolicyIssue } from "./policy/policy-file";

/** Every error code and its HTTP status. */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_policy: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  /** POST /v1/settle: no such reservation, or it expired. */
  unknown_reservation: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  not_ready: 503,
  store_unavailable: 503,
} as const;
export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorBody {
  error: { code: ErrorCode; message: string; field: string | null; issues?: PolicyIssue[] };
}

export function errorBody(code: ErrorCode, message: string, options: { field?: string | null; issues?: readonly PolicyIssue[] } = {}): ErrorBody {
  const body: ErrorBody = { error: { code, message, field: options.field ?? null } };
  if (options.issues && options.issues.length > 0) body.error.issues = [...options.issues];
  return body;
}

/**
 * A failure a use case reports to its caller (CLI, route handler, server action): a code, a message
 * for humans, the failing field and, for policy validation, every issue with its path.
 */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly field: string | null;
  readonly issues: PolicyIssue[];
  /** Response headers that belong with this error (`WWW-Authenticate`, `Retry-After`). */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * The file path of the object the caller edited (`tiers[2]`): a form shows issues under it
   * relative to it (`limits.0.window`), and others as they are.
   */
  readonly scope: string | null;

  constructor(
    code: ErrorCode,
    message: string,
    options: { field?: string | null; issues?: PolicyIssue[]; headers?: Record<string, string>; scope?: string | null; cause?: unknown } = {},
  ) {
    // The cause is for logs and the CLI's debug output; no envelope or action result carries it.
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ServiceError";
    this.code = code;
    this.field = options.field ?? options.issues?.[0]?.path ?? null;
    this.issues = options.issues ?? [];
    this.headers = options.headers ?? {};
    this.scope = options.scope ?? null;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

/** An invalid policy: the message is the first issue (`tiers[0].limits[3].window: expected …`). */
export function invalidPolicy(issues: PolicyIssue[], options: { scope?: string | null } = {}): ServiceError {
  const first = issues[0];
  const message = first ? (first.path ? `${first.path}: ${first.message}` : first.message) : "invalid policy";
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : "";
  return new ServiceError("invalid_policy", message + more, { issues, scope: options.scope });
}

// ---------------------------------------------------------------------------------------------
// Server actions

export interface FieldIssue {
  /** Dotted path in the submitted object, e.g. `limits.3.window`; "" for the whole form. */
  path: string;
  message: string;
}

export type ActionResult<T = undefined> =
  | { ok: true; message?: string; data?: T }
  | { ok: false; status: number; message: string; issues?: FieldIssue[] };

/** `tiers[2].limits[0].window` → `["tiers", 2, "limits", 0, "window"]` */
function pathParts(path: string): (string | number)[] {
  const parts: (string | number)[] = [];
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) parts.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  return parts;
}

/**
 * The one mapping of a failure to an action result: a ServiceError becomes its status, message and
 * issues (dotted, relative to the edited object when they are inside it); anything else is a bug,
 * logged and answered 500 without its details (the use cases write in one transaction, so a
 * failure changed nothing).
 */
export function actionFailure(error: unknown): { ok: false; status: number; message: string; issues?: FieldIssue[] } {
  if (!(error instanceof ServiceError)) {
    console.error("sluice action: unexpected error", error);
    return { ok: false, status: 500, message: "Something went wrong on the server; nothing was changed, and the cause was logged." };
  }
  if (error.status >= 500 && error.cause !== undefined) console.error(`sluice action: ${error.message}`, error.cause);
  const root = error.scope ? pathParts(error.scope) : [];
  const relative = (path: string) => {
    const parts = pathParts(path);
    const inside = root.length > 0 && root.every((p, i) => parts[i] === p);
    return (inside ? parts.slice(root.length) : parts).join(".");
  };
  const issues = error.issues.length
    ? error.issues.map((i) => ({ path: relative(i.path), message: i.message }))
    : error.field
      ? [{ path: relative(error.field), message: error.message }]
      : undefined;
  return { ok: false, status: error.status, message: error.message, issues };
}

/** Runs a use case for a server action: its value becomes `ok`, a ServiceError the failure. */
export async function actionResult<T, D = undefined>(
  call: () => Promise<T>,
  ok: (value: T) => { message: string; data?: D },
): Promise<ActionResult<D>> {
  let value: T;
  try {
    value = await call();
  } catch (error) {
    return actionFailure(error);
  }
  const { message, data } = ok(value);
  return { ok: true, message, data };
}
