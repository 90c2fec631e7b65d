/**
 * Envoy's rate limit service protocol ↔ Sluice decisions (pure: no I/O, no clock). The contract is
 * docs/gateways.md "Envoy, Istio, Contour: the rate limit service protocol"; in short:
 *
 * Request → decisions. Each descriptor is one decision of the engine `/v1/check` uses:
 * - `api_key` is the client's key, `tenant` a tenant slug (one of them, not both);
 * - `remote_address` the client's address, canonical (lib/decision/client-address.ts, the rule
 *   forward-auth follows), `masked_remote_address` (`203.0.113.0/24`) the client's network; an
 *   unparseable one is the shared `unknown` subject, never "no IP limit";
 * - `operation` an operation name (or `METHOD /path`), or `method` + `path` (`:method`, `:path`);
 * - the cost is the descriptor's `hits_addend`, else the request's; 0 (what Envoy sends when
 *   nothing sets one) means the operation's own cost, which is 1 unless the policy sets `cost`;
 * - a descriptor's `limit` override and every other entry key are ignored: the published policy
 *   decides, a gateway's descriptor cannot rewrite a tier's limits.
 * Values a client controls never make the call fail (an Envoy that gets an error lets the request
 * through unless `failure_mode_deny` is set): an empty, absent or unknown `api_key` / `tenant` is
 * decided as an unknown key (OVER_LIMIT), a path is cut to what an operation can hold. Malformed
 * input that only the gateway's configuration can produce is INVALID_ARGUMENT naming the field.
 *
 * Answers → response. `overall_code` is OVER_LIMIT when any descriptor is denied, else OK; one
 * status per descriptor with the limit its answer's headers describe (the most restrictive one);
 * `response_headers_to_add` are the headers of the most restrictive answer of all, exactly those
 * `/v1/check` returns (RateLimit, RateLimit-Policy, the RateLimit-Limit/-Remaining/-Reset trio,
 * Retry-After when denied), plus `x-sluice-reason` when denied.
 */
import type { DecisionAnswer } from "../decision/answer";
import { decisionRequest, type DecisionRequest } from "../decision/engine";
import { MAX_BATCH, MAX_COST, MAX_FIELD_CHARS, type FieldError } from "../decision/request";
import type { Reason } from "../policy/types";
import { clientAddressOrUnknown, UNKNOWN_CLIENT_ADDRESS } from "../decision/client-address";
import { formatIpAddress, parseIpRange } from "../policy/ip-address";
import type { RlsDescriptorStatus, RlsHeader, RlsRateLimit, RlsRequestMessage, RlsResponseMessage, RlsUnit } from "./messages";

/** The descriptor entry keys Sluice reads; every other key is ignored. */
export const RLS_ENTRY_KEYS = ["api_key", "tenant", "remote_address", "masked_remote_address", "operation", "method", "path"] as const;
type EntryKey = (typeof RLS_ENTRY_KEYS)[number];
/**
 * Each key's place in RLS_ENTRY_KEYS. The decoder gives these keys as the same constant strings
 * (lib/rls/decode.ts), so a lookup hashes nothing new.
 */
const ENTRY_SLOTS: ReadonlyMap<string, number> = new Map(RLS_ENTRY_KEYS.map((k, i) => [k, i]));

export const MAX_DESCRIPTORS = MAX_BATCH;
export const MAX_ENTRIES = 32;
const MAX_METHOD_CHARS = 32;
/** An HTTP method is a token (RFC 9110 §5.6.2). */
const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The descriptor entry that carries the service token for gateways that cannot set gRPC metadata
 * on the rate limit call (Contour's ExtensionService has no such field): a static entry
 * (`genericKey`) in every descriptor. Never a decision input.
 */
export const TOKEN_ENTRY = "sluice_token";

/** The token every descriptor carries in a `sluice_token` entry, when they all carry the same one. */
export function descriptorToken(message: RlsRequestMessage): string | undefined {
  let token: string | undefined;
  for (const d of message.descriptors ?? []) {
    const value = d.entries?.find((e) => e.key === TOKEN_ENTRY)?.value;
    if (!value || (token !== undefined && value !== token)) return undefined;
    token = value;
  }
  return token;
}

/** Request headers Sluice adds to the upstream request on OK (Envoy: `request_headers_to_add`). */
export const LEASE_HEADER = "x-sluice-lease";
export const DELAY_HEADER = "x-sluice-delay-ms";
/** Response header naming why a request was denied. */
export const REASON_HEADER = "x-sluice-reason";

export type RlsPlan = { ok: true; requests: DecisionRequest[] } | { ok: false; error: FieldError };

/**
 * Envoy's `masked_remote_address` (`a.b.c.d/len`, `v6/len`) as one counter subject: the network
 * with its host bits cleared, canonical, then `/len`, so `203.0.113.7/24` and `203.0.113.0/24`
 * share one counter. An IPv4-mapped network (`::ffff:203.0.113.7/120`) is its IPv4 network
 * (`203.0.113.0/24`). Anything else is the shared unknown subject.
 */
export function clientNetworkOrUnknown(text: string): string {
  const range = text.includes("/") ? parseIpRange(text) : null;
  if (!range) return UNKNOWN_CLIENT_ADDRESS;
  const network = formatIpAddress(range.address);
  const mapped = range.address.family === 6 && !network.includes(":");
  if (mapped && range.bits < 96) return UNKNOWN_CLIENT_ADDRESS;
  return `${network}/${mapped ? range.bits - 96 : range.bits}`;
}

function fail(field: string, message: string): { ok: false; error: FieldError } {
  return { ok: false, error: { field, message: `${field}: ${message}` } };
}

function shown(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
}

/** A hits_addend as a cost: undefined for 0 or absent (the operation's own cost, 1 unless the policy sets one). */
function costOf(addend: number | undefined, field: string): number | undefined | FieldError {
  const n = addend ?? 0;
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_COST) return { field, message: `${field}: expected an integer ≤ ${MAX_COST}` };
  return n === 0 ? undefined : n;
}

const isError = (v: number | undefined | FieldError): v is FieldError => typeof v === "object";

/** Why an entry's value is refused (the message after the field's path), or null. */
function invalidValue(key: EntryKey, value: string): string | null {
  if (key === "operation" && (value === "" || value.length > MAX_FIELD_CHARS)) return `operation: expected an operation name of 1 to ${MAX_FIELD_CHARS} characters`;
  if (key === "method" && (value.length > MAX_METHOD_CHARS || !METHOD.test(value))) return `method: expected an HTTP method, got ${shown(value)}`;
  if (key === "path" && value === "") return "path: expected a request path";
  return null;
}

/**
 * `METHOD /path` for the engine. The query and fragment never choose an operation, and a path is
 * cut so that the operation fits MAX_FIELD_CHARS: a client's long URL must not fail the call
 * (Envoy would let it through), and operation patterns are short.
 */
function operationOf(method: string, path: string): string {
  const query = path.indexOf("?");
  const fragment = path.indexOf("#");
  const cut = query === -1 ? fragment : fragment === -1 ? query : Math.min(query, fragment);
  const bare = cut === -1 ? path : path.slice(0, cut);
  const room = MAX_FIELD_CHARS - method.length - 1;
  return `${method} ${bare.length > room ? bare.slice(0, room) : bare}`;
}

/**
 * Turns a decoded RateLimitRequest into one decision request per descriptor, or the first error
 * (its field named the way a protobuf JSON path reads: `descriptors[1].entries[0].value`).
 */
export function planRateLimit(message: RlsRequestMessage, options: { domain: string }): RlsPlan {
  const domain = message.domain ?? "";
  if (domain !== options.domain) return fail("domain", `expected ${shown(options.domain)} (SLUICE_RLS_DOMAIN), got ${shown(domain)}`);
  const descriptors = message.descriptors ?? [];
  if (descriptors.length === 0) return fail("descriptors", "expected at least 1 descriptor");
  if (descriptors.length > MAX_DESCRIPTORS) return fail("descriptors", `at most ${MAX_DESCRIPTORS} descriptors`);
  const requestCost = costOf(message.hits_addend, "hits_addend");
  if (isError(requestCost)) return { ok: false, error: requestCost };

  const requests: DecisionRequest[] = [];
  for (let i = 0; i < descriptors.length; i++) {
    const d = descriptors[i]!;
    const entries = d.entries ?? [];
    if (entries.length === 0) return fail(`descriptors[${i}].entries`, "expected at least 1 entry");
    if (entries.length > MAX_ENTRIES) return fail(`descriptors[${i}].entries`, `at most ${MAX_ENTRIES} entries`);
    // The entries Sluice reads, each at most once, by their place in RLS_ENTRY_KEYS; field paths
    // are written only for an error.
    const seen = new Array<string | undefined>(RLS_ENTRY_KEYS.length);
    for (let j = 0; j < entries.length; j++) {
      const key = entries[j]!.key ?? "";
      const value = entries[j]!.value ?? "";
      if (key === "") return fail(`descriptors[${i}].entries[${j}].key`, "expected a non-empty key");
      const slot = ENTRY_SLOTS.get(key);
      if (slot === undefined) continue;
      if (seen[slot] !== undefined) return fail(`descriptors[${i}].entries[${j}].key`, `${shown(key)} appears twice in one descriptor`);
      seen[slot] = value;
      const invalid = invalidValue(key as EntryKey, value);
      if (invalid !== null) return fail(`descriptors[${i}].entries[${j}].value`, invalid);
    }
    const [apiKey, tenant, remoteAddress, maskedRemoteAddress, operationEntry, method, path] = seen;

    const at = `descriptors[${i}]`;
    if (apiKey !== undefined && tenant !== undefined) return fail(at, "give api_key or tenant, not both");
    if (remoteAddress !== undefined && maskedRemoteAddress !== undefined) {
      return fail(at, "give remote_address or masked_remote_address, not both");
    }
    let operation: string;
    if (operationEntry !== undefined) {
      if (method !== undefined || path !== undefined) return fail(at, "give operation, or method and path, not both");
      operation = operationEntry;
    } else if (method !== undefined && path !== undefined) {
      operation = operationOf(method, path);
    } else if (method !== undefined || path !== undefined) {
      return fail(at, "method and path go together");
    } else {
      return fail(at, "an operation is required: an `operation` entry, or `method` and `path`");
    }

    // The descriptor's own hits_addend wins; 0 or absent falls back to the request's.
    const own = d.hits_addend ? costOf(d.hits_addend.value, `${at}.hits_addend`) : undefined;
    if (isError(own)) return { ok: false, error: own };
    const cost = own ?? requestCost;

    // No tenant entry: the api_key decides, and an empty or absent one is an unknown key (the
    // engine answers unknown_key), never "no limit".
    const ip = remoteAddress !== undefined ? clientAddressOrUnknown(remoteAddress) : maskedRemoteAddress !== undefined ? clientNetworkOrUnknown(maskedRemoteAddress) : undefined;
    requests.push(decisionRequest(tenant !== undefined ? { tenant, operation, cost, ip } : { key: apiKey ?? "", operation, cost, ip }));
  }
  return { ok: true, requests };
}

// ---- Answers → response

const UINT32_MAX = 0xffff_ffff;
const uint32 = (n: number) => Math.max(0, Math.min(UINT32_MAX, Math.floor(n)));

/** Envoy's units by their length in seconds (Envoy reads MONTH as 30 days, YEAR as 365). */
const UNIT_OF_SECONDS: ReadonlyMap<number, RlsUnit> = new Map([
  [1, "SECOND"],
  [60, "MINUTE"],
  [3_600, "HOUR"],
  [86_400, "DAY"],
  [604_800, "WEEK"],
  [2_592_000, "MONTH"],
  [31_536_000, "YEAR"],
]);

/** One item of a `RateLimit-Policy` header as lib/decision/answer.ts writes it: `"name";q=100;w=60`. */
export interface PolicyItem {
  name: string;
  quota: number;
  /** 0 when the item has no `w` (a concurrency limit). */
  windowSeconds: number;
}

export function parsePolicyItem(header: string): PolicyItem | null {
  const m = /^"((?:[^"\\]|\\.)*)";q=(\d+)(?:;w=(\d+))?$/.exec(header);
  if (!m) return null;
  return { name: m[1]!.replace(/\\(.)/g, "$1"), quota: Number(m[2]), windowSeconds: m[3] === undefined ? 0 : Number(m[3]) };
}

/**
 * The limit an answer's headers describe, as Envoy's RateLimit: a window of exactly one unit is
 * that unit; any other window (30s, 10m, 2h; a concurrency limit's none) is unit UNKNOWN with the
 * same number, since scaling it to a unit would change what the limit means. The exact window
 * always travels in the RateLimit-Policy header.
 */
export function currentLimitOf(answer: DecisionAnswer): RlsRateLimit | undefined {
  const header = answer.headers["RateLimit-Policy"];
  if (header === undefined) return undefined;
  let limit = LIMITS_BY_HEADER.get(header);
  if (limit === undefined) {
    const item = parsePolicyItem(header);
    limit = item ? Object.freeze({ name: item.name, requests_per_unit: uint32(item.quota), unit: UNIT_OF_SECONDS.get(item.windowSeconds) ?? "UNKNOWN" }) : null;
    if (LIMITS_BY_HEADER.size >= 1_000) LIMITS_BY_HEADER.clear();
    LIMITS_BY_HEADER.set(header, limit);
  }
  return limit ?? undefined;
}

/**
 * The limit of each RateLimit-Policy header seen lately (bounded: dropped whole past 1,000, then
 * refilled), frozen and shared: a policy has a few limits, and every call of a limit carries the
 * same header, so its parse (a regular expression) runs once, not once per call.
 */
const LIMITS_BY_HEADER = new Map<string, Readonly<RlsRateLimit> | null>();

export function descriptorStatus(answer: DecisionAnswer): RlsDescriptorStatus {
  const status: RlsDescriptorStatus = { code: answer.allowed ? "OK" : "OVER_LIMIT", limit_remaining: answer.allowed ? uint32(answer.remaining) : 0 };
  const limit = currentLimitOf(answer);
  if (limit) {
    status.current_limit = limit;
    status.duration_until_reset = { seconds: answer.resetSeconds, nanos: 0 };
  }
  return status;
}

/** Denials no wait cures come first: the client must not be told to retry after N seconds. */
const PERMANENT: ReadonlySet<Reason> = new Set(["unknown_key", "tenant_suspended", "cost_exceeds_limit"]);
function denialRank(a: DecisionAnswer): number {
  if (PERMANENT.has(a.reason)) return 3;
  return a.reason === "store_unavailable" ? 2 : 1;
}

/**
 * The answer whose headers the response carries: when any is denied, the denial that lasts
 * longest; else the allowed answer closest to its limit (fewest remaining, then latest reset),
 * the same choice lib/decision/answer.ts makes among one decision's limits.
 */
export function headlineAnswer(answers: readonly DecisionAnswer[]): DecisionAnswer | undefined {
  let best: DecisionAnswer | undefined;
  for (const a of answers) {
    if (a.allowed) continue;
    if (!best) best = a;
    else {
      const r = denialRank(a) - denialRank(best);
      if (r > 0 || (r === 0 && a.retryAfterSeconds > best.retryAfterSeconds)) best = a;
    }
  }
  if (best) return best;
  for (const a of answers) {
    if (a.headers.RateLimit === undefined) continue;
    if (!best || a.remaining < best.remaining || (a.remaining === best.remaining && a.resetSeconds > best.resetSeconds)) best = a;
  }
  return best;
}

export interface RlsAnswer {
  response: RlsResponseMessage;
  /** Leases taken by descriptors that passed in a request that was denied: free them (no client will). */
  leasesToRelease: string[];
}

export function rateLimitResponse(answers: readonly DecisionAnswer[]): RlsAnswer {
  const statuses = answers.map(descriptorStatus);
  const denied = answers.some((a) => !a.allowed);
  const headline = headlineAnswer(answers);
  const responseHeaders: RlsHeader[] = [];
  if (headline) for (const name in headline.headers) responseHeaders.push({ key: name, value: headline.headers[name]! });
  if (denied && headline) responseHeaders.push({ key: REASON_HEADER, value: headline.reason });

  const leases: string[] = [];
  let delayMs = 0;
  for (const a of answers) {
    if (a.leaseId) leases.push(a.leaseId);
    if (a.delayMs > delayMs) delayMs = a.delayMs;
  }
  const requestHeaders: RlsHeader[] = [];
  if (!denied) {
    if (leases.length > 0) requestHeaders.push({ key: LEASE_HEADER, value: leases.join(",") });
    if (delayMs > 0) requestHeaders.push({ key: DELAY_HEADER, value: String(delayMs) });
  }
  return {
    response: {
      overall_code: denied ? "OVER_LIMIT" : "OK",
      statuses,
      response_headers_to_add: responseHeaders,
      request_headers_to_add: requestHeaders,
    },
    leasesToRelease: denied ? leases : [],
  };
}
