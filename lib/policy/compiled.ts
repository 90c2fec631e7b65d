/**
 * The compiled policy document: what `publish` writes to Redis as `policy:v<N>` and what every
 * decision server evaluates. Pure data (JSON), versioned and checksummed, indexed for the decision
 * path. It never contains API keys: those live in the Redis hash `keys` (sha256(key) → tenant).
 */
import type { BillingChange, CompiledBilling } from "./billing-period";
import type { CompiledPlanChange, PlanChangeRule } from "./plan-change";
import type { CompiledEnvoyService } from "./envoy/compiled";
import type { ApprovalSettings } from "./approval";
import type { CompiledRequirements } from "./requirements";
import type { Algorithm, FailureMode, Mode, Overage, Period, RegionMode, Scope, Share, TenantStatus } from "./types";

export const COMPILED_SCHEMA_VERSION = 1;

/** One rate limit as the engine sees it. Durations in ms; `windowMs` is 0 for concurrency. */
export interface CompiledLimit {
  /** Stable across publishes while tier, operation, scope and algorithm stay: counters survive edits. */
  id: string;
  /** The name used in RateLimit-Policy: `<tier>-<scope>` or `<tier>-<operation>-<scope>`. */
  name: string;
  operation: string;
  scope: Scope;
  algorithm: Algorithm;
  limit: number;
  windowMs: number;
  /** Bucket size for token_bucket / leaky_bucket (defaults to limit). */
  burst: number;
  /** Sub-windows of sliding_window_counter (1 = the plain two-window formula). */
  precision: number;
  mode: Mode;
  maxDelayMs: number;
  leaseTtlMs: number;
  /** Across regions (docs/regions.md); absent: `local`, so documents from before regions keep their checksums. */
  regions?: Exclude<RegionMode, "local">;
}

export interface CompiledQuota {
  id: string;
  operation: string;
  period: Period;
  limit: number;
  overage: Overage;
}

export interface CompiledGlobalCap {
  id: string;
  operation: string;
  limit: number;
  windowMs: number;
  share: Share;
  /** Across regions (docs/regions.md); absent: `local`. */
  regions?: Exclude<RegionMode, "local">;
}

export interface CompiledOperation {
  name: string;
  cost: number;
  failureMode: FailureMode;
  match: string[];
}

export interface CompiledTier {
  name: string;
  weight: number;
  limits: CompiledLimit[];
  quotas: CompiledQuota[];
  /** Notification thresholds in percent of each quota; absent: the default (80, 100). */
  thresholds?: number[];
}

export type CompiledOverride =
  | { kind: "limit"; operation: string; scope: Scope; limit: CompiledLimit; expiresAtMs: number | null }
  | { kind: "quota"; operation: string; period: Period; quota: CompiledQuota; expiresAtMs: number | null };

export interface CompiledTenant {
  slug: string;
  name: string;
  tier: string;
  status: TenantStatus;
  overrides: CompiledOverride[];
  /** Absent: the UTC calendar month and day (lib/policy/billing-period.ts). */
  billing?: CompiledBilling;
  /** Overrides the tier's thresholds. */
  thresholds?: number[];
  /**
   * Stamped by publish (lib/policy/publish-stamps.ts), never written in a policy file: the last
   * change of `billing` and of `tier`, carried from version to version until the next one.
   */
  billingChange?: BillingChange;
  planChange?: CompiledPlanChange;
}

/** A route pattern split for matching: `GET /v1/orders/*` → method GET, segments [v1, orders, *]. */
export interface CompiledRoute {
  method: string;
  segments: string[];
  operation: string;
}

export interface CompiledPolicyBody {
  schemaVersion: typeof COMPILED_SCHEMA_VERSION;
  /** `planChange` is there only when the policy names one (absent: full). */
  defaults: { failureMode: FailureMode; planChange?: PlanChangeRule };
  operations: Record<string, CompiledOperation>;
  /** Routes, most specific first (exact segments before `*` before `**`, longer before shorter). */
  routes: CompiledRoute[];
  tiers: Record<string, CompiledTier>;
  globalCaps: CompiledGlobalCap[];
  tenants: Record<string, CompiledTenant>;
  /** The policy file's `requirements` block, parsed; absent when the file has none (defaults apply). */
  requirements?: CompiledRequirements;
  /** The `rateLimitService` section: Envoy domains' descriptor trees; absent when the policy has none. */
  rateLimitService?: CompiledEnvoyService;
  /** The policy file's `approval` block with its defaults (lib/policy/approval.ts); absent: no approval needed. */
  approval?: ApprovalSettings;
}

export interface CompiledPolicy extends CompiledPolicyBody {
  version: number;
  /** sha256 of the canonical JSON of the body: equal bodies, equal checksums. */
  checksum: string;
  createdAt: string;
}
