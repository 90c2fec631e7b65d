/**
 * The per-minute usage aggregates' format: what the decision servers write (./usage.ts
 * UsageRecorder), the rollup worker drains into Postgres, and the dashboards and billing read.
 *
 * ## Format (a public contract between the decision server and the rollup worker)
 *
 * One Redis hash per UTC minute: `keys.usageMinute(minuteStartMs)`
 * (`<p>{u:<minuteStartMs>}:usage`), TTL {@link USAGE_TTL_SECONDS} (2 days), refreshed on every
 * write. Every field is an integer counter (HINCRBY):
 *
 * | field                                          | counts                                             |
 * | ---------------------------------------------- | -------------------------------------------------- |
 * | `d|<tenant>|<tier>|<operation>|<outcome>`      | decisions; outcome ∈ allowed, denied, shadow_denied, degraded |
 * | `k|<tenant>|<keyPrefix>|<allowed|denied>`      | decisions per API key prefix (top consumers)        |
 * | `l|<allowed|denied>|<bucketIndex>`             | decision latency histogram, buckets {@link LATENCY_BUCKETS_MS} |
 * | `e|redis_error`, `e|redis_timeout`, `e|breaker_open` | store failures seen on the decision path     |
 * | `q|<tenant>|<quotaId>`                         | decisions denied (429) by that quota               |
 * | `a|<tier>|<limit>|<sampled|limit|exact>`       | the accuracy meter: sampled decisions, and those the limit / an exact log admitted |
 * | `r|<tenant>|<tier>|<operation>|<limitName>`    | decisions denied (429) by that limit: the 429s broken down by the check that denied them |
 * | `n|<tenant>|<tier>|<reason>`                   | denied decisions by the answer's reason (`rate_limited`, `unknown_key`, `tenant_suspended`, …) |
 *
 * - `<tenant>` is the tenant slug, `_` when the key was unknown; `<tier>` is the tier name or `_`;
 *   `<operation>` is the resolved operation name, `*` when no operation matched. `|` never occurs in
 *   these names (it is replaced by `_` if it does).
 * - Outcomes: `allowed` passed (incl. delay-mode passes), `denied` any non-200 status (401, 403,
 *   429, 503), `shadow_denied` passed but a shadow limit would have denied (counted instead of
 *   `allowed`), `degraded` passed on the failure-mode path without the counter store (open or local).
 * - `<keyPrefix>` is the first 12 hex characters of sha256(api key); `_` for tenant-only calls.
 * - Latency buckets: index i counts decisions with latency ≤ LATENCY_BUCKETS_MS[i] ms (and > the
 *   previous bound); the last index, LATENCY_BUCKETS_MS.length, counts everything slower.
 * - `q|…` is written in addition to the `d|…|denied` field of the same decision, when the check that
 *   denied it (the one the answer names, lib/decision/answer.ts `mostRestrictive`) is a quota:
 *   `reason` `quota_exhausted`, or `cost_exceeds_limit` on a quota. One decision counts for one quota
 *   at most, so the `q|` fields of a tenant never sum to more than its `denied` decisions. Denials
 *   answered from the deny cache count the same way. `<quotaId>` is the compiled quota id (16 hex).
 *   Older writers never wrote `q|` fields and older readers skip them (unknown fields are ignored).
 * - `r|…` is written in addition to the `d|…|denied` field of the same decision for every 429 a
 *   check denied (rate limit, quota, concurrency, global cap; from Redis, the deny cache or
 *   failure mode local): `<limitName>` is the RateLimit-Policy name of the check the answer names
 *   (`mostRestrictive`, as for `q|`), e.g. `free-orders-read-api_key`, `free-month`,
 *   `global-*`. One decision counts for one limit, so a tenant's `r|` fields sum to its 429s.
 *   Added 2026-12-03; older readers skip it.
 * - `n|…` is written in addition to the `d|…|denied` field of the same decision for every denial
 *   (401, 403, 429, 503): `<reason>` is the answer's `reason` exactly as the decision API names it
 *   (docs/decision-api.md), so a tenant's `n|` fields sum to its `denied` decisions and a 429
 *   share can count 429s only. Added 2026-12-06; minutes written before it have none (their
 *   denials are "reason not recorded"), and older readers skip it.
 * - `a|…` (lib/decision/accuracy.ts): `<limit>` is the limit's name (`free-api_key`), one field
 *   triple per tier and approximate limit whose subjects the meter samples. Added 2026-12-03.
 *
 * A set `keys.usageMinutes()` holds the minute starts (decimal ms strings) that have a hash. The
 * worker's rollup (lib/jobs/rollup.ts) reads a minute with {@link parseUsageHash} once the minute
 * is over (plus a grace of a few seconds, since decision servers flush every second), writes it to
 * Postgres idempotently, then SREMs the member; the hash itself expires on its own.
 */
import { USAGE_ERRORS, USAGE_OUTCOMES, type UsageError, type UsageOutcome } from "../decision/ports";

export const USAGE_TTL_SECONDS = 2 * 86_400;
/** Upper bounds (ms, inclusive) of the latency histogram buckets; one more bucket holds the rest. */
export const LATENCY_BUCKETS_MS = [0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000] as const;

export function minuteStartMs(ms: number): number {
  return Math.floor(ms / 60_000) * 60_000;
}

function clean(name: string): string {
  return name.includes("|") ? name.replaceAll("|", "_") : name;
}

export function latencyBucketIndex(latencyMs: number): number {
  for (let i = 0; i < LATENCY_BUCKETS_MS.length; i++) if (latencyMs <= LATENCY_BUCKETS_MS[i]!) return i;
  return LATENCY_BUCKETS_MS.length;
}

export const usageFields = {
  decision: (tenant: string, tier: string, operation: string, outcome: UsageOutcome) =>
    `d|${clean(tenant)}|${clean(tier)}|${clean(operation)}|${outcome}`,
  key: (tenant: string, keyPrefix: string, outcome: "allowed" | "denied") =>
    `k|${clean(tenant)}|${clean(keyPrefix)}|${outcome}`,
  latency: (outcome: "allowed" | "denied", bucketIndex: number) => `l|${outcome}|${bucketIndex}`,
  error: (error: UsageError) => `e|${error}`,
  quotaDenied: (tenant: string, quotaId: string) => `q|${clean(tenant)}|${clean(quotaId)}`,
  /** Units beyond one per decision (cost − 1, summed) of passed decisions whose cost is not 1. */
  extraUnits: (tenant: string, tier: string, operation: string, outcome: UsageOutcome) =>
    `x|${clean(tenant)}|${clean(tier)}|${clean(operation)}|${outcome}`,
  limitDenied: (tenant: string, tier: string, operation: string, limit: string) => `r|${clean(tenant)}|${clean(tier)}|${clean(operation)}|${clean(limit)}`,
  denialReason: (tenant: string, tier: string, reason: string) => `n|${clean(tenant)}|${clean(tier)}|${clean(reason)}`,
  accuracy: (tier: string, limit: string, what: AccuracyCount) => `a|${clean(tier)}|${clean(limit)}|${what}`,
};


export const ACCURACY_COUNTS = ["sampled", "limit", "exact"] as const;
/** sampled: decisions of sampled subjects; limit / exact: those the limit / an exact log admitted. */
export type AccuracyCount = (typeof ACCURACY_COUNTS)[number];

export interface UsageMinute {
  minuteStartMs: number;
  decisions: { tenant: string; tier: string; operation: string; outcome: UsageOutcome; count: number }[];
  keys: { tenant: string; keyPrefix: string; outcome: "allowed" | "denied"; count: number }[];
  /** Per outcome, counts per bucket index (length LATENCY_BUCKETS_MS.length + 1). */
  latency: { allowed: number[]; denied: number[] };
  errors: Record<UsageError, number>;
  /** Decisions denied by a quota, per tenant and quota id (`q|` fields). */
  quotaDenials: { tenant: string; quotaId: string; count: number }[];
  /** 429s by the limit that denied them (RateLimit-Policy name), per tenant, tier and operation (`r|` fields). */
  limitDenials: { tenant: string; tier: string; operation: string; limit: string; count: number }[];
  /** The accuracy meter's counts per tier and limit (`a|` fields). */
  accuracy: { tier: string; limit: string; what: AccuracyCount; count: number }[];
  /** Denied decisions by the answer's reason, per tenant (`_`: none resolved) and tier (`n|` fields); absent or empty before they were recorded. */
  denialReasons?: { tenant: string; tier: string; reason: string; count: number }[];
  /**
   * Passed decisions' units beyond one each (`x|` fields): a decision row's units are its count
   * plus the matching extra units. Hashes written before this field existed have none (cost 1).
   */
  extraUnits?: { tenant: string; tier: string; operation: string; outcome: UsageOutcome; units: number }[];
}

/** Parses one minute's hash (HGETALL) into typed rows; unknown or malformed fields are skipped. */
export function parseUsageHash(minute: number, hash: Record<string, string>): UsageMinute {
  const out: UsageMinute = {
    minuteStartMs: minute,
    decisions: [],
    keys: [],
    latency: {
      allowed: new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0),
      denied: new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0),
    },
    errors: { redis_error: 0, redis_timeout: 0, breaker_open: 0 },
    quotaDenials: [],
    limitDenials: [],
    accuracy: [],
    extraUnits: [],
    denialReasons: [],
  };
  for (const [field, raw] of Object.entries(hash)) {
    const count = Number(raw);
    if (!Number.isSafeInteger(count)) continue;
    const parts = field.split("|");
    if (parts[0] === "d" && parts.length === 5) {
      const outcome = parts[4] as UsageOutcome;
      if (!USAGE_OUTCOMES.includes(outcome)) continue;
      out.decisions.push({ tenant: parts[1]!, tier: parts[2]!, operation: parts[3]!, outcome, count });
    } else if (parts[0] === "x" && parts.length === 5) {
      const outcome = parts[4] as UsageOutcome;
      if (!USAGE_OUTCOMES.includes(outcome) || outcome === "denied") continue;
      (out.extraUnits ??= []).push({ tenant: parts[1]!, tier: parts[2]!, operation: parts[3]!, outcome, units: count });
    } else if (parts[0] === "k" && parts.length === 4) {
      const outcome = parts[3];
      if (outcome !== "allowed" && outcome !== "denied") continue;
      out.keys.push({ tenant: parts[1]!, keyPrefix: parts[2]!, outcome, count });
    } else if (parts[0] === "l" && parts.length === 3) {
      const outcome = parts[1];
      const index = Number(parts[2]);
      if ((outcome !== "allowed" && outcome !== "denied") || !Number.isInteger(index)) continue;
      if (index < 0 || index > LATENCY_BUCKETS_MS.length) continue;
      out.latency[outcome][index]! += count;
    } else if (parts[0] === "e" && parts.length === 2) {
      const error = parts[1] as UsageError;
      if (USAGE_ERRORS.includes(error)) out.errors[error] += count;
    } else if (parts[0] === "q" && parts.length === 3) {
      if (parts[1] === "" || parts[2] === "") continue;
      out.quotaDenials.push({ tenant: parts[1]!, quotaId: parts[2]!, count });
    } else if (parts[0] === "r" && parts.length === 5) {
      if (parts[1] === "" || parts[4] === "") continue;
      out.limitDenials.push({ tenant: parts[1]!, tier: parts[2]!, operation: parts[3]!, limit: parts[4]!, count });
    } else if (parts[0] === "n" && parts.length === 4) {
      if (parts[1] === "" || parts[3] === "") continue;
      (out.denialReasons ??= []).push({ tenant: parts[1]!, tier: parts[2]!, reason: parts[3]!, count });
    } else if (parts[0] === "a" && parts.length === 4) {
      const what = parts[3] as AccuracyCount;
      if (!ACCURACY_COUNTS.includes(what) || parts[2] === "") continue;
      out.accuracy.push({ tier: parts[1]!, limit: parts[2]!, what, count });
    }
  }
  return out;
}
