/**
 * What the decision engine and its server need from the world (docs/architecture.md): the Redis and
 * single-node Postgres adapters implement these, and worker/decision/server.ts plugs them in.
 * lib/decision imports no adapter (ESLint refuses it: LAYERS in eslint-layers.mjs).
 */
import { hash } from "node:crypto";
import type { CompiledPolicy } from "../policy/compiled";
import type { Reason } from "../policy/types";

/**
 * Thrown by {@link KeyIndexPort.fetch} when the index itself is missing (Redis restarted empty): the
 * key is neither known nor unknown, so the failure mode applies; the store did answer, so the breaker stays closed.
 */
export class KeyIndexMissingError extends Error {
  constructor() {
    super("the API key index is missing from the store");
  }
}

/** API key → tenant, by the key's hash ({@link KeyHasher}). */
export interface KeyIndexPort {
  /** The cached answer, without I/O: a slug, null (known unknown key), or undefined (not cached). */
  peek(keyHash: string): string | null | undefined;
  /** Asks the index itself (and caches the answer); throws when it cannot. */
  fetch(keyHash: string): Promise<string | null>;
}

/** How an API key is named wherever it is stored (key index, usage, counter subjects): lowercase hex, the digest publish indexes by. */
export type KeyHasher = (key: string) => string;

/** sha256 hex (one-shot crypto.hash: the same digest as createHash().update().digest(), without the Hash object). */
export const sha256KeyHash: KeyHasher = (key) => hash("sha256", key, "hex");

export const USAGE_OUTCOMES = ["allowed", "denied", "shadow_denied", "degraded"] as const;
/**
 * allowed: passed (delay-mode passes included); denied: any non-200 status; shadow_denied: passed,
 * but a shadow limit would have denied; degraded: passed without the counter store (open or local).
 */
export type UsageOutcome = (typeof USAGE_OUTCOMES)[number];
export const USAGE_ERRORS = ["redis_error", "redis_timeout", "breaker_open"] as const;
/** A store failure seen on the decision path. */
export type UsageError = (typeof USAGE_ERRORS)[number];
/** Hex characters of the key hash that name a key in the usage aggregates (top consumers). */
export const KEY_PREFIX_LENGTH = 12;

/** What the accuracy meter saw on one sampled check (lib/decision/accuracy.ts). */
export interface AccuracyEvent {
  /** The limit's name (its RateLimit-Policy name, `<tier>-<scope>` or `<tier>-<operation>-<scope>`). */
  limit: string;
  /** The limit admitted the request (and so did every other check of the decision). */
  limitAdmitted: boolean;
  /** An exact sliding-window log of the same limit would have admitted it (the others too). */
  exactAdmitted: boolean;
}

/** One decision as the accounting sees it. */
export interface UsageEvent {
  /** When it was decided: the store's clock when the store answered, else the local clock (ms). */
  atMs: number;
  tenant: string | null;
  tier: string | null;
  operation: string | null;
  outcome: UsageOutcome;
  /** First KEY_PREFIX_LENGTH hex chars of the key hash; null for tenant-only calls. */
  keyPrefix: string | null;
  latencyMs: number;
  /** The id of the quota that denied this decision (outcome `denied`, status 429); null or absent otherwise. */
  deniedQuota?: string | null;
  /** The RateLimit-Policy name of the check that denied this decision (status 429); null or absent otherwise. */
  deniedLimit?: string | null;
  /** A denied decision's `reason` (docs/decision-api.md); null or absent when it passed. */
  deniedReason?: Reason | null;
  /** The accuracy meter's samples of this decision; absent when it sampled none. */
  accuracy?: AccuracyEvent[];
  /** Units a passed decision consumed (its cost); absent means 1. Quotas count units, as the store does. */
  units?: number;
}

/** Where each decision is reported for usage and billing (exactly once per decision that is not a dry run). */
export interface UsageSink {
  record(event: UsageEvent): void;
  recordError(atMs: number, error: UsageError): void;
}

/** What of the published state the store lacks (`/readyz` lists these). */
export type MissingPart = "policy" | "keyIndex" | "serviceTokens";

/** What the decision server needs from a policy source. `current` is null until a valid document loads, never after. */
export interface PolicyPort {
  readonly current: CompiledPolicy | null;
  /** During a guarded rollout the candidate for the cohort, else `current`; O(1). Absent: `current` for all. */
  forTenant?(tenant: string): CompiledPolicy | null;
  /** What the store lacks of the published state, as of the last read (empty: all there). */
  readonly missing: readonly MissingPart[];
  /** Loads once (never throws), then keeps following. */
  start(): Promise<void>;
  /** Loads the live version if it changed; never throws, never replaces a good doc with a bad one. */
  refresh(): Promise<void>;
  stop(): void;
}
