/**
 * The deny cache: a counter known to deny a request of cost c until time T denies every request
 * of cost ≥ c on it until T, whatever else that request checks (all checks must pass). Such
 * requests are answered in process until T — the counter's exact next-allowed time from the
 * store, not the window's end — with no Redis call. Requests of a smaller cost still go to the
 * store (they might fit earlier). Concurrency denials are never cached (a release frees a slot at
 * any time), nor shadow ones. The cache is cleared when a new policy version is loaded, since
 * limits may have changed.
 *
 * Times here are the local monotonic-ish clock: T is computed as (when the store call was sent) +
 * retryAfterMs, which is never later than the store's own T, so the cache never denies a request
 * the store would have passed.
 */
import type { CheckOutcome } from "../store/types";

export interface DeniedEntry {
  untilMs: number;
  cost: number;
  outcome: CheckOutcome;
  index: number;
}

export class DenyCache {
  private readonly map = new Map<string, DeniedEntry>();
  constructor(private readonly maxEntries = 100_000) {}

  /** Remembers that `key` denies cost ≥ `cost` until `untilMs`. */
  remember(key: string, cost: number, untilMs: number, outcome: CheckOutcome, index: number): void {
    const existing = this.map.get(key);
    if (existing && existing.untilMs >= untilMs && existing.cost <= cost) return;
    this.map.delete(key);
    this.map.set(key, { untilMs, cost, outcome, index });
    if (this.map.size > this.maxEntries) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
  }

  /** The live entry denying `cost` on `key` at `nowMs`, if any. */
  lookup(key: string, cost: number, nowMs: number): DeniedEntry | undefined {
    const entry = this.map.get(key);
    if (!entry) return undefined;
    if (entry.untilMs <= nowMs) {
      this.map.delete(key);
      return undefined;
    }
    return cost >= entry.cost ? entry : undefined;
  }

  clear(): void {
    this.map.clear();
  }

  get size(): number {
    return this.map.size;
  }
}
