/**
 * The counter store of envoyproxy/ratelimit's fixed window (the `rateLimitService` section's
 * default counting, lib/policy/envoy/decide.ts): per counter, INCRBY of the hits in the window
 * aligned to the unit at the store's clock, every hit counted (an over-limit one too), the count
 * after returned. One call takes every counter of one ShouldRateLimit and counts them all
 * atomically (Redis: one script, ./redis-store.ts; in process: ./memory-store.ts). Deciding
 * (`count > requests_per_unit`) is the caller's, from the counts.
 */

/** One counter of one call. */
export interface EnvoyCounterInput {
  /** The counter's key up to its window (lib/policy/counter-keys.ts `envoy`, hash tag included): the store appends `:<windowStartSeconds>`. */
  key: string;
  /** The window in whole seconds (their unit: SECOND 1 … YEAR 31,536,000). */
  windowSeconds: number;
  /** Units to add (0: read the count without adding). */
  hits: number;
}

export interface EnvoyCounts {
  /** The store's clock when it counted (ms; Redis TIME). */
  nowMs: number;
  /** The count after this call, per input, in order. */
  counts: number[];
}

export interface EnvoyCounterStore {
  /**
   * Counts every input in one atomic step. Past `timeoutMs` (from when the call is sent) it
   * rejects with StoreTimeoutError (lib/store/types.ts): the call may still run, so it is never retried.
   */
  count(inputs: readonly EnvoyCounterInput[], options: { timeoutMs?: number }): Promise<EnvoyCounts>;
}

/** `[⌊now / window⌋ · window` in Unix seconds: the suffix of a counter's key, theirs too. */
export function envoyWindowStartSeconds(nowMs: number, windowSeconds: number): number {
  const nowS = Math.floor(nowMs / 1000);
  return nowS - (nowS % windowSeconds);
}
