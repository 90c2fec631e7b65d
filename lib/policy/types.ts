/**
 * The vocabulary of the policy model (docs/policy-file.md). Every other module speaks in these terms.
 */
export const ALGORITHMS = [
  "fixed_window",
  "sliding_window_log",
  "sliding_window_counter",
  "token_bucket",
  "leaky_bucket",
  "concurrency",
] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

/** What is counted together: one API key, all keys of a tenant, one client address, everybody. */
export const SCOPES = ["api_key", "tenant", "ip", "global"] as const;
export type Scope = (typeof SCOPES)[number];

/** reject: 429; delay: the caller waits up to maxDelay, then passes; shadow: never denies, reports. */
export const MODES = ["reject", "delay", "shadow"] as const;
export type Mode = (typeof MODES)[number];

/** What a decision does when the counter store cannot answer. */
export const FAILURE_MODES = ["open", "closed", "local"] as const;
export type FailureMode = (typeof FAILURE_MODES)[number];

export const PERIODS = ["day", "month"] as const;
export type Period = (typeof PERIODS)[number];

export const OVERAGES = ["block", "bill"] as const;
export type Overage = (typeof OVERAGES)[number];

export const TENANT_STATUSES = ["active", "suspended"] as const;
export type TenantStatus = (typeof TENANT_STATUSES)[number];

export const SHARES = ["none", "weighted"] as const;
export type Share = (typeof SHARES)[number];

/**
 * How a limit or global cap is enforced across regions (docs/regions.md): `local` (the default, as
 * with one region: each region enforces the whole limit), `split` (each region enforces its share,
 * the shares summing to at most the limit) or `shared` (every region counts all regions' traffic).
 */
export const REGION_MODES = ["local", "split", "shared"] as const;
export type RegionMode = (typeof REGION_MODES)[number];

export const ROLES = ["admin", "product", "sre", "billing"] as const;
export type Role = (typeof ROLES)[number];

/** The operation name that matches every operation in a limit or quota row. */
export const ANY_OPERATION = "*";

/** Why a decision came out the way it did (docs/decision-api.md). */
export const REASONS = [
  "ok",
  "rate_limited",
  "quota_exhausted",
  "concurrency_limited",
  "cost_exceeds_limit",
  "unknown_key",
  "tenant_suspended",
  "store_unavailable",
] as const;
export type Reason = (typeof REASONS)[number];
