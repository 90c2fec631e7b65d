/**
 * Envoy's RateLimitRequest and RateLimitResponse as protobuf JSON (the proto3 JSON mapping), for
 * `POST /json`, the HTTP twin of ShouldRateLimit that envoyproxy/ratelimit serves beside gRPC.
 * Pure: no I/O.
 *
 * In: each field by its JSON name (`hitsAddend`) or its proto name (`hits_addend`), as protobuf
 * JSON parsers accept; `null` is an absent field; 32-bit integers as numbers or decimal strings,
 * the descriptor's `hitsAddend` (a UInt64Value) as either; an enum by name or number. Anything
 * else — an unknown field, a field twice under both names, a wrong type — is an error naming the
 * field as a JSON path reads (`descriptors[0].limit.unit`), nothing decided.
 *
 * Out: camelCase names, enums as names, `durationUntilReset` as a Duration string (`"42s"`), and
 * fields at their zero value left out, as protobuf JSON writes them (theirs too).
 */
import type { FieldError } from "../decision/request";
import { MAX_DESCRIPTORS, MAX_ENTRIES } from "./mapping";
import type { RlsDescriptorMessage, RlsEntryMessage, RlsRequestMessage, RlsResponseMessage } from "./messages";

const UINT32_MAX = 0xffff_ffff;
/** Their `RateLimitResponse.RateLimit.Unit` (a descriptor's `limit` uses it), by number. */
const UNITS = ["UNKNOWN", "SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR", "WEEK"] as const;

class JsonFieldError extends Error {
  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`);
  }
}

const at = (path: string, name: string) => (path === "" ? name : `${path}.${name}`);

/** An object's fields by proto name, each JSON name folded into it; unknown or repeated ones refused. */
function fields(value: unknown, path: string, known: Record<string, string>): Map<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new JsonFieldError(path || "(body)", "expected an object");
  const out = new Map<string, unknown>();
  for (const [name, v] of Object.entries(value)) {
    const proto = known[name];
    if (proto === undefined) throw new JsonFieldError(at(path, name), "unknown field");
    if (out.has(proto)) throw new JsonFieldError(at(path, name), `given twice (as ${proto} and its JSON name)`);
    if (v !== null) out.set(proto, v);
  }
  return out;
}

function string(v: unknown, field: string): string {
  if (typeof v !== "string") throw new JsonFieldError(field, "expected a string");
  return v;
}

function integer(v: unknown, field: string, max: number): number {
  const n = typeof v === "string" && /^\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0 || n > max) throw new JsonFieldError(field, `expected an integer from 0 to ${max}`);
  return n;
}

function list(v: unknown, field: string, max: number): unknown[] {
  if (!Array.isArray(v)) throw new JsonFieldError(field, "expected an array");
  if (v.length > max) throw new JsonFieldError(field, `at most ${max} items`);
  return v;
}

function unit(v: unknown, field: string): string {
  if (typeof v === "number" && Number.isInteger(v) && v >= 0 && v < UNITS.length) return UNITS[v]!;
  if (typeof v === "string" && (UNITS as readonly string[]).includes(v)) return v;
  throw new JsonFieldError(field, `expected one of ${UNITS.join(", ")}`);
}

function entry(v: unknown, path: string): RlsEntryMessage {
  const f = fields(v, path, { key: "key", value: "value" });
  const e: RlsEntryMessage = {};
  if (f.has("key")) e.key = string(f.get("key"), at(path, "key"));
  if (f.has("value")) e.value = string(f.get("value"), at(path, "value"));
  return e;
}

function descriptor(v: unknown, path: string): RlsDescriptorMessage {
  const f = fields(v, path, { entries: "entries", limit: "limit", hitsAddend: "hits_addend", hits_addend: "hits_addend" });
  const d: RlsDescriptorMessage = {};
  if (f.has("entries")) d.entries = list(f.get("entries"), at(path, "entries"), MAX_ENTRIES).map((e, i) => entry(e, `${at(path, "entries")}[${i}]`));
  if (f.has("limit")) {
    const lp = at(path, "limit");
    const l = fields(f.get("limit"), lp, { requestsPerUnit: "requests_per_unit", requests_per_unit: "requests_per_unit", unit: "unit" });
    d.limit = {};
    if (l.has("requests_per_unit")) d.limit.requests_per_unit = integer(l.get("requests_per_unit"), at(lp, "requestsPerUnit"), UINT32_MAX);
    if (l.has("unit")) d.limit.unit = unit(l.get("unit"), at(lp, "unit"));
  }
  // A UInt64Value is its bare value in JSON; Sluice's costs stay within 32 bits, as the request's.
  if (f.has("hits_addend")) d.hits_addend = { value: integer(f.get("hits_addend"), at(path, "hitsAddend"), UINT32_MAX) };
  return d;
}

export type JsonRequestResult = { ok: true; request: RlsRequestMessage } | { ok: false; error: FieldError };

/** A parsed JSON body as a RateLimitRequest, or the first bad field. */
export function parseRateLimitRequestJson(body: unknown): JsonRequestResult {
  try {
    const f = fields(body, "", { domain: "domain", descriptors: "descriptors", hitsAddend: "hits_addend", hits_addend: "hits_addend" });
    const request: RlsRequestMessage = {};
    if (f.has("domain")) request.domain = string(f.get("domain"), "domain");
    if (f.has("descriptors")) request.descriptors = list(f.get("descriptors"), "descriptors", MAX_DESCRIPTORS).map((d, i) => descriptor(d, `descriptors[${i}]`));
    if (f.has("hits_addend")) request.hits_addend = integer(f.get("hits_addend"), "hitsAddend", UINT32_MAX);
    return { ok: true, request };
  } catch (error) {
    if (error instanceof JsonFieldError) return { ok: false, error: { field: error.field, message: error.message } };
    throw error;
  }
}

/** Protobuf JSON of a RateLimitResponse: what envoyproxy/ratelimit's `/json` writes. */
export function rateLimitResponseJson(r: RlsResponseMessage): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (r.overall_code !== "UNKNOWN") out.overallCode = r.overall_code;
  if (r.statuses.length > 0) {
    out.statuses = r.statuses.map((s) => {
      const status: Record<string, unknown> = {};
      if (s.code !== "UNKNOWN") status.code = s.code;
      if (s.current_limit) {
        const limit: Record<string, unknown> = {};
        if (s.current_limit.name) limit.name = s.current_limit.name;
        if (s.current_limit.requests_per_unit) limit.requestsPerUnit = s.current_limit.requests_per_unit;
        if (s.current_limit.unit !== "UNKNOWN") limit.unit = s.current_limit.unit;
        status.currentLimit = limit;
      }
      if (s.limit_remaining) status.limitRemaining = s.limit_remaining;
      if (s.duration_until_reset) status.durationUntilReset = `${s.duration_until_reset.seconds}s`;
      return status;
    });
  }
  if (r.response_headers_to_add.length > 0) out.responseHeadersToAdd = r.response_headers_to_add.map((h) => ({ key: h.key, value: h.value }));
  if (r.request_headers_to_add.length > 0) out.requestHeadersToAdd = r.request_headers_to_add.map((h) => ({ key: h.key, value: h.value }));
  return out;
}
