/** Parsing of decision API bodies (docs/decision-api.md) with zod, into errors that name the field (`cost: expected an integer ≥ 1`). */
import { z } from "zod";
import { canonicalClientAddress } from "./client-address";
import { decisionRequest, type DecisionRequest } from "./engine";

export const MAX_FIELD_CHARS = 512;
export const MAX_BATCH = 100;
export const MAX_COST = 1_000_000_000;

export interface FieldError {
  field: string;
  message: string;
}

const text = (what: string) =>
  z
    .string({ error: `expected ${what}` })
    .min(1, { error: `expected ${what}` })
    .max(MAX_FIELD_CHARS, { error: `at most ${MAX_FIELD_CHARS} characters` });

const id = (what: string, maxChars: number) =>
  z
    .string({ error: `expected ${what}` })
    .min(1, { error: `expected ${what}` })
    .max(maxChars, { error: "too long" });

const units = (min: number) =>
  z
    .number({ error: `expected an integer ≥ ${min}` })
    .int({ error: `expected an integer ≥ ${min}` })
    .min(min, { error: `expected an integer ≥ ${min}` })
    .max(MAX_COST, { error: `expected an integer ≤ ${MAX_COST}` });

/** Unknown fields are refused, naming the field: a typo (`dry_run`) must not silently consume. */
export const checkSchema = z
  .strictObject({
    key: text("a non-empty string").optional(),
    tenant: text("a tenant slug").optional(),
    operation: text("\"METHOD /path\" or an operation name"),
    ip: z
      .string({ error: "expected an IP address" })
      .max(64, { error: "expected an IP address" })
      .refine((v) => canonicalClientAddress(v) !== null, { error: "expected an IP address" })
      .optional(),
    cost: units(1).optional(),
    dryRun: z.boolean({ error: "expected a boolean" }).optional(),
    explain: z.boolean({ error: "expected a boolean" }).optional(),
    reserve: z.boolean({ error: "expected a boolean" }).optional(),
  })
  .refine((v) => v.key !== undefined || v.tenant !== undefined, { error: "one of key or tenant is required", path: ["key"] })
  .refine((v) => v.key === undefined || v.tenant === undefined, { error: "give key or tenant, not both", path: ["tenant"] });

function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? String(part) : `.${String(part)}`;
  }
  return out;
}

function firstIssue(error: z.ZodError, prefix: (string | number)[], value: Record<string, unknown>): FieldError {
  const issue = error.issues[0];
  if (issue?.code === "unrecognized_keys") {
    const field = fieldPath([...prefix, ...issue.path, issue.keys[0] ?? ""]);
    return { field, message: `${field}: unknown field` };
  }
  const field = fieldPath([...prefix, ...(issue?.path ?? [])]);
  const top = issue?.path[0];
  const missing = issue?.code === "invalid_type" && issue.path.length === 1 && typeof top === "string" && value[top] === undefined;
  const message = missing ? "is required" : (issue?.message ?? "invalid");
  return { field, message: `${field}: ${message}` };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export type ParsedCheck =
  | { ok: true; batch: false; request: DecisionRequest }
  | { ok: true; batch: true; requests: DecisionRequest[] }
  | { ok: false; error: FieldError };

function parseOne(value: unknown, prefix: (string | number)[]): { ok: true; request: DecisionRequest } | { ok: false; error: FieldError } {
  if (!isPlainObject(value)) {
    const field = fieldPath(prefix);
    return { ok: false, error: { field, message: `${field || "body"}: expected a JSON object` } };
  }
  const fast = fastCheck(value);
  if (fast) return { ok: true, request: fast };
  // Anything the fast path does not accept goes through zod, which names the first bad field.
  const result = checkSchema.safeParse(value);
  if (!result.success) return { ok: false, error: firstIssue(result.error, prefix, value) };
  // Every spelling of one address is one counter subject (lib/decision/client-address.ts).
  if (result.data.ip !== undefined) result.data.ip = canonicalClientAddress(result.data.ip)!;
  return { ok: true, request: decisionRequest(result.data) };
}

const okText = (v: unknown): v is string => typeof v === "string" && v.length >= 1 && v.length <= MAX_FIELD_CHARS;

const CHECK_FIELDS = new Set(["key", "tenant", "operation", "ip", "cost", "dryRun", "explain", "reserve"]);

/**
 * The hot path: a body checkSchema accepts, decoded by hand into the request zod would give. Null
 * for anything else, which then gets zod's verdict: the two never disagree on an error.
 */
function fastCheck(v: Record<string, unknown>): DecisionRequest | null {
  for (const name in v) if (!CHECK_FIELDS.has(name)) return null;
  const { key, tenant, operation, ip, cost, dryRun, explain, reserve } = v;
  if (!okText(operation)) return null;
  if (key !== undefined ? !okText(key) || tenant !== undefined : !okText(tenant)) return null;
  let canonical: string | undefined;
  if (ip !== undefined) {
    if (typeof ip !== "string" || ip.length > 64) return null;
    canonical = canonicalClientAddress(ip) ?? undefined;
    if (canonical === undefined) return null;
  }
  if (cost !== undefined && (typeof cost !== "number" || !Number.isSafeInteger(cost) || cost < 1 || cost > MAX_COST)) return null;
  if ((dryRun !== undefined && typeof dryRun !== "boolean") || (explain !== undefined && typeof explain !== "boolean") || (reserve !== undefined && typeof reserve !== "boolean")) return null;
  return decisionRequest({
    key: key as string | undefined,
    tenant: tenant as string | undefined,
    operation,
    ip: canonical,
    cost: cost as number | undefined,
    dryRun: dryRun as boolean | undefined,
    explain: explain as boolean | undefined,
    reserve: reserve as boolean | undefined,
  });
}

/** Parses a /v1/check body (already JSON-decoded): one request, or `{ requests: [...] }`. */
export function parseCheckBody(body: unknown): ParsedCheck {
  if (isPlainObject(body) && "requests" in body) {
    for (const name in body) if (name !== "requests") return { ok: false, error: { field: name, message: `${name}: unknown field (a batch is { "requests": [...] } alone)` } };
    const list = body.requests;
    if (!Array.isArray(list)) return { ok: false, error: { field: "requests", message: "requests: expected an array" } };
    if (list.length === 0) return { ok: false, error: { field: "requests", message: "requests: expected at least 1 request" } };
    if (list.length > MAX_BATCH) return { ok: false, error: { field: "requests", message: `requests: at most ${MAX_BATCH} requests` } };
    const requests: DecisionRequest[] = [];
    for (let i = 0; i < list.length; i++) {
      const one = parseOne(list[i], ["requests", i]);
      if (!one.ok) return one;
      requests.push(one.request);
    }
    return { ok: true, batch: true, requests };
  }
  const one = parseOne(body, []);
  return one.ok ? { ok: true, batch: false, request: one.request } : one;
}

export const releaseSchema = z.strictObject({
  leaseId: id("a lease id", MAX_FIELD_CHARS * 4),
});

export function parseReleaseBody(body: unknown): { ok: true; leaseId: string } | { ok: false; error: FieldError } {
  if (!isPlainObject(body)) return { ok: false, error: { field: "", message: "body: expected a JSON object" } };
  const result = releaseSchema.safeParse(body);
  if (!result.success) return { ok: false, error: firstIssue(result.error, [], body) };
  return { ok: true, leaseId: result.data.leaseId };
}

export const settleSchema = z.strictObject({
  reservationId: id("a reservation id", MAX_FIELD_CHARS * 8),
  actualCost: units(0),
});

export type SettleBody = z.infer<typeof settleSchema>;

/** Parses a /v1/settle body: `{ reservationId, actualCost }` (actualCost an integer ≥ 0). */
export function parseSettleBody(body: unknown): { ok: true; value: SettleBody } | { ok: false; error: FieldError } {
  if (!isPlainObject(body)) return { ok: false, error: { field: "", message: "body: expected a JSON object" } };
  const result = settleSchema.safeParse(body);
  if (!result.success) return { ok: false, error: firstIssue(result.error, [], body) };
  return { ok: true, value: result.data };
}
