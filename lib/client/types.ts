/**
 * The decision API's wire types (docs/decision-api.md), as a service sees them. The SDK imports nothing from
 * the server (it must run in browsers and edge runtimes), so these are written out here;
 * `types.test.ts` proves they equal the server's own `DecisionRequest` and `DecisionAnswer`, so the
 * two cannot drift apart silently.
 */

/** Why a decision came out the way it did. */
export type Reason =
  | "ok"
  | "rate_limited"
  | "quota_exhausted"
  | "concurrency_limited"
  | "cost_exceeds_limit"
  | "unknown_key"
  | "tenant_suspended"
  | "store_unavailable";

/** One question for `POST /v1/check`. Give `key` or `tenant`, not both. */
export interface DecisionRequest {
  /** The end client's API key (plaintext; the decision server hashes it and never stores it). */
  key?: string;
  /** Or the tenant's slug, when the caller already knows the tenant. */
  tenant?: string;
  /** `METHOD /path` (`GET /v1/orders/42`) or an operation name (`export`). At most 512 characters. */
  operation: string;
  /** The end client's address (IPv4 or IPv6), for `ip`-scoped limits. */
  ip?: string;
  /** Units this request consumes (integer ≥ 1); default the operation's cost. */
  cost?: number;
  /** Evaluate without consuming anything. */
  dryRun?: boolean;
  /** Include every limit checked and its counters in `checks`. */
  explain?: boolean;
  /**
   * Reserve `cost` now and settle the actual cost later (`SluiceClient.settle`): an allowed answer
   * carries `reservationId`, and the difference is refunded once the work is done.
   */
  reserve?: boolean;
}

/** With `explain: true`: one limit the decision checked. */
export interface ExplainedCheck {
  name: string;
  kind: string;
  scope: string;
  algorithm: string;
  mode: string;
  key: string;
  allowed: boolean;
  reason: string;
  limit: number;
  remaining: number;
  resetSeconds: number;
  retryAfterSeconds: number;
  delayMs: number;
  shadowDenied: boolean;
}

/** The decision server's answer to one request, exactly as `POST /v1/check` sends it. */
export interface WireAnswer {
  allowed: boolean;
  /** What to answer the end client: 200, 401 unknown key, 403 suspended, 429 limited, 503 fail-closed. */
  status: 200 | 401 | 403 | 429 | 503;
  reason: Reason;
  tenant: string | null;
  tier: string | null;
  operation: string | null;
  policyVersion: number;
  /** The most restrictive limit's size, and what is left of it. */
  limit: number;
  remaining: number;
  /** Seconds until that limit is full again (whole seconds, rounded up). */
  resetSeconds: number;
  /** When denied: seconds after which the same request passes if nothing else consumes; 0 if it never can. */
  retryAfterSeconds: number;
  /** Shaping limits (mode `delay`): wait this long before serving the request. */
  delayMs: number;
  /** `RateLimit`, `RateLimit-Policy`, `RateLimit-Limit/-Remaining/-Reset`, `Retry-After`: copy them into your response. */
  headers: Record<string, string>;
  /** A shadow-mode limit would have denied (the request passed). */
  shadowDenied?: boolean;
  /** Decided without the counter store (failure mode open or local). */
  degraded?: boolean;
  /** Concurrency leases taken; free them with `release`. Comma-separated if several. */
  leaseId?: string;
  /** With `reserve: true`, on an allowed decision that committed something: pass it to `settle`. */
  reservationId?: string;
  dryRun?: boolean;
  checks?: ExplainedCheck[];
}

/** `POST /v1/settle`'s answer. */
export interface SettleAnswer {
  reservationId: string;
  reservedCost: number;
  actualCost: number;
  /** Units given back on every counter the reservation committed: max(0, reservedCost − actualCost). */
  refunded: number;
  /** The same settle had been made before: nothing more was refunded. */
  replayed: boolean;
}

/**
 * What `SluiceClient.settle` hands back: the settle (`ok`), or why not — `unknown` (no such
 * reservation, or it expired after 10 minutes: it stays charged in full), `conflict` (settled with
 * another actual cost before; `error` names it), `unavailable` (the decision API could not be asked
 * in time; the same settle again is safe).
 */
export type SettleOutcome =
  | ({ ok: true } & SettleAnswer)
  | { ok: false; reason: "unknown" | "conflict" | "unavailable"; error: string };

/**
 * What `SluiceClient` hands back: the wire answer, or one the SDK made itself because the decision
 * API could not be asked (unreachable, slower than `timeoutMs`, answering 5xx or 401); then `error`
 * says why, and `onError` chose the answer.
 */
export interface DecisionAnswer extends WireAnswer {
  /** Set only on an answer the SDK made without the decision API. */
  error?: string;
}
