/**
 * The deny cache answers a repeated denial without a store call, and never changes a decision: with
 * and without it, the same requests get the same decisions, reasons and Retry-After (to the second;
 * deny-cache.test.ts holds that over random policies and traffic). Other servers consuming the same
 * counters only make them deny more: a cached denial is still one the store would give, but its
 * Retry-After or reason can then understate. Per counter key, from the store answers it saw:
 * - `denied`: the counter denied a request of cost c, which passes after retryAfterMs if nothing
 *   else consumes; until then a request of exactly cost c is denied by it, with the wait left.
 * - `room`: the units it had left after that answer's commit. Only a commit lowers it (time only
 *   frees units, in every algorithm) and every commit of this server's goes through the store, whose
 *   answer updates it: a request of cost ≤ room passes it.
 * A request is answered here only when one of its counters is denied for its cost AND every other is
 * known to have room; anything unknown (a counter not seen yet, another cost, cost_exceeds_limit, a
 * shadow limit that might report) goes to the store.
 *
 * Never cached: concurrency denials (a release frees a slot at any time), shadow denials, a request
 * on a weighted global cap (the store records every such request on the cap, and the other tenants'
 * shares depend on it), a subject the accuracy meter samples (its exact log must see every request).
 * Cleared when a policy version, a rollout step or a region's share loads; an answer to a call sent
 * before the clear is not learnt (its limits may be the other version's, and would deny until the
 * window ends).
 *
 * Times are the local monotonic clock: an entry ends at (when the store call was sent) + retryAfterMs,
 * never later than the store's own instant, so the cache never denies a request the store would pass.
 */
import type { CheckOutcome, LimitCheck, StoreDecision } from "../store/types";

interface DeniedEntry {
  untilMs: number;
  cost: number;
  outcome: CheckOutcome;
}

export class DenyCache {
  private readonly denied = new Map<string, DeniedEntry>();
  private readonly room = new Map<string, number>();
  private cleared = 0;
  constructor(private readonly maxEntries = 100_000) {}

  /** How many times the cache was cleared: read before a store call, passed to observe with its answer. */
  get epoch(): number {
    return this.cleared;
  }

  /** Learns from one store decision on `checks` (sent at `sentAtMs`, local clock, in `epoch`). */
  observe(checks: readonly LimitCheck[], decision: StoreDecision, cost: number, sentAtMs: number, epoch: number): void {
    if (epoch !== this.cleared) return;
    const outcomes = decision.outcomes;
    for (let i = 0; i < checks.length; i++) {
      const c = checks[i]!;
      // A subject the accuracy meter samples stays unknown, so its requests all reach the store's exact log.
      if (c.fairShare || c.exactLog) continue;
      const o = outcomes[i]!;
      // Room is only read for the other counters of a denied decision with several checks: learnt
      // from denials, only kept up to date by allowed answers, so allowed traffic over many subjects
      // does not churn the map (that cost the GC more than the rest of the decision).
      if (checks.length > 1 && !o.shadowDenied && (!decision.allowed || (this.room.size > 0 && this.room.has(c.key)))) this.bounded(this.room, c.key, o.remaining);
      else if (this.room.size > 0) this.room.delete(c.key);
      const cacheable = !o.allowed && c.mode !== "shadow" && c.algorithm !== "concurrency" && o.reason !== "cost_exceeds_limit" && o.retryAfterMs > 0;
      if (cacheable) this.bounded(this.denied, c.key, { untilMs: sentAtMs + o.retryAfterMs, cost, outcome: o });
      else if (this.denied.size > 0) this.denied.delete(c.key);
    }
  }

  /** The denial these checks would get from the store at `nowMs` for `cost`, with the waits left; null: ask the store. */
  decide(checks: readonly LimitCheck[], cost: number, nowMs: number): StoreDecision | null {
    if (this.denied.size === 0) return null;
    let denying = 0;
    for (let i = 0; i < checks.length; i++) {
      const key = checks[i]!.key;
      const entry = this.denied.get(key);
      if (entry === undefined) continue;
      if (entry.untilMs <= nowMs) this.denied.delete(key);
      else if (entry.cost === cost) denying++;
    }
    if (denying === 0) return null;
    const outcomes = new Array<CheckOutcome>(checks.length);
    for (let i = 0; i < checks.length; i++) {
      const c = checks[i]!;
      if (c.fairShare || c.exactLog) return null;
      const entry = this.denied.get(c.key);
      if (entry !== undefined && entry.cost === cost) {
        const waitMs = entry.untilMs - nowMs;
        outcomes[i] = { ...entry.outcome, remaining: 0, retryAfterMs: waitMs, resetAtMs: nowMs + waitMs, delayMs: 0 };
        continue;
      }
      const room = this.room.get(c.key);
      if (room === undefined || room < cost) return null;
      outcomes[i] = { allowed: true, reason: "ok", limit: c.limit, remaining: room, resetAtMs: nowMs, retryAfterMs: 0, delayMs: 0 };
    }
    return { nowMs, allowed: false, outcomes };
  }

  private bounded<V>(map: Map<string, V>, key: string, value: V): void {
    map.set(key, value);
    if (map.size > this.maxEntries) {
      const oldest = map.keys().next().value;
      if (oldest !== undefined) map.delete(oldest);
    }
  }

  clear(): void {
    this.cleared++;
    this.denied.clear();
    this.room.clear();
  }

  /** Live and expired denial entries (0: nothing to look up). */
  get size(): number {
    return this.denied.size;
  }
}
