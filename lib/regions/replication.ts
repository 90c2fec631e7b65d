/**
 * `regions: shared` (docs/regions.md#shared-every-region-counts-every-regions-traffic), the part on
 * the decision path: what a region admits for a shared check is added to an outbox, coalesced per
 * counter and window, and sent to the other regions in small batches (worker/decision/replication.ts
 * publishes them on NATS JetStream; lib/regions/replication-apply.ts adds them to each other
 * region's counter of the same window). A decision never waits for any of it.
 *
 * The window a unit belongs to is worked out here exactly as the Lua twins name it
 * (lib/store/lua/fixed-window.ts, sliding-window-counter.ts), from the decision's store clock (the
 * `now` DECIDE returns): windows are aligned to the epoch, so the window's key (a fixed window) or
 * its sub-window field (a sliding window counter's hash) names the same window in every region.
 */
import { z } from "zod";
import type { CounterStore, LimitCheck, StoreDecision } from "../store/types";

/** One counter of one window, and the units admitted into it since the last batch. */
export interface ReplicatedUnits {
  /** The Redis key written: `<counter>:<windowStartMs>` (fixed window) or the counter's hash (sliding window counter). */
  key: string;
  /** The hash field of the sub-window (`floor(nowMs ÷ sub)`), or "" for a fixed window's STRING counter. */
  field: string;
  units: number;
  /** When the key expires in the admitting region (absolute ms, store clock): the end of what the window can still count. */
  expireAtMs: number;
  /** A sliding window counter's sub-windows per window (its precision); 0 for a fixed window. */
  subWindows: number;
}

/** Where a check's units go, or null when its algorithm's counter does not simply add up (never replicated). */
export function replicatedWindow(check: LimitCheck, nowMs: number): Omit<ReplicatedUnits, "units"> | null {
  if (check.algorithm === "fixed_window") {
    const startMs = Math.floor(nowMs / check.windowMs) * check.windowMs;
    return { key: `${check.key}:${startMs}`, field: "", expireAtMs: startMs + check.windowMs, subWindows: 0 };
  }
  if (check.algorithm === "sliding_window_counter" && check.fairShare === undefined) {
    const k = Math.max(1, check.precision);
    const subMs = Math.max(1, Math.floor(check.windowMs / k));
    const i = Math.floor(nowMs / subMs);
    // The counter's expiry after a write in sub-window i (sliding_window_counter_commit).
    return { key: check.key, field: String(i), expireAtMs: (i + k + 1) * subMs, subWindows: k };
  }
  return null;
}

export interface OutboxOptions {
  /** The most distinct (counter, window) entries buffered; units for a new one beyond it are dropped (counted). */
  maxEntries: number;
  /** Called when the outbox stops being empty (the link schedules a flush). */
  onFirst: () => void;
  /** Called when it reaches `fullEntries` entries (the link flushes without waiting for its timer). */
  onFull: () => void;
  fullEntries: number;
}

/** A batch as taken from the outbox: its entries, and when the first of its units was admitted (store clock). */
export interface OutboxBatch {
  firstAdmitMs: number;
  entries: ReplicatedUnits[];
}

/**
 * Admitted units waiting to be sent, coalesced per (counter, window): a hot counter costs one entry
 * per batch however many decisions it admitted, so the outbox is bounded by the distinct windows,
 * not by the request rate. Bounded: beyond `maxEntries` a new entry is dropped and its units counted
 * in `droppedUnits` (sluice_replication_dropped_total); the decision itself is never affected.
 */
export class ReplicationOutbox {
  private entries = new Map<string, ReplicatedUnits>();
  private firstAdmitMs = 0;
  /** Units that were admitted here but will never be counted elsewhere: the outbox was full. */
  droppedUnits = 0;

  constructor(private readonly options: OutboxOptions) {}

  get size(): number {
    return this.entries.size;
  }

  add(window: Omit<ReplicatedUnits, "units">, units: number, admitMs: number): void {
    const id = window.field === "" ? window.key : `${window.key}\n${window.field}`;
    const known = this.entries.get(id);
    if (known !== undefined) {
      known.units += units;
      return;
    }
    if (this.entries.size >= this.options.maxEntries) {
      this.droppedUnits += units;
      return;
    }
    if (this.entries.size === 0) {
      this.firstAdmitMs = admitMs;
      this.options.onFirst();
    }
    this.entries.set(id, { ...window, units });
    if (this.entries.size === this.options.fullEntries) this.options.onFull();
  }

  /** Everything buffered, in batches of at most `maxBatch` entries; windows that ended by `nowMs` are left out (nobody counts them any more). */
  take(nowMs: number, maxBatch: number): OutboxBatch[] {
    const live = [...this.entries.values()].filter((e) => e.expireAtMs > nowMs);
    const firstAdmitMs = this.firstAdmitMs;
    this.entries = new Map();
    const batches: OutboxBatch[] = [];
    for (let i = 0; i < live.length; i += maxBatch) batches.push({ firstAdmitMs, entries: live.slice(i, i + maxBatch) });
    return batches;
  }
}

/**
 * The counter store with replication: every decision that committed (allowed, not a dry run) adds
 * the cost of each of its shared checks to the outbox, once the store has answered. A shadow check
 * that would have denied consumed nothing, so it adds nothing. Refunds (`settle`) are not
 * replicated: the other regions keep counting the reserved units, which errs on the side of limiting.
 */
export function withReplication(store: CounterStore, outbox: ReplicationOutbox): CounterStore {
  const record = (checks: readonly LimitCheck[], decision: StoreDecision, cost: number): StoreDecision => {
    if (!decision.allowed) return decision;
    for (let i = 0; i < checks.length; i++) {
      const check = checks[i]!;
      if (check.replicate !== true || decision.outcomes[i]?.shadowDenied === true) continue;
      const window = replicatedWindow(check, decision.nowMs);
      if (window !== null) outbox.add(window, cost, decision.nowMs);
    }
    return decision;
  };
  return {
    check(checks, options) {
      const answer = store.check(checks, options);
      if (options.dryRun || !checks.some((c) => c.replicate === true)) return answer;
      return answer.then((decision) => record(checks, decision, options.cost));
    },
    release: (leaseId) => store.release(leaseId),
    settle: (reservationId, actualCost) => store.settle(reservationId, actualCost),
    close: () => store.close(),
    flush: () => store.flush?.(),
  };
}

/**
 * One message on the replication stream (`sluice.replication.<region>`), JSON. Entries are tuples
 * [key, field, units, expireAtMs, subWindows] to keep a batch small. Parsed at the boundary: a
 * message that does not validate is acknowledged and ignored (logged), never applied.
 */
export const replicationMessageSchema = z.strictObject({
  v: z.literal(1),
  region: z.string().min(1).max(32),
  firstAdmitMs: z.number().int().nonnegative(),
  entries: z
    .array(z.tuple([z.string().min(1).max(1024), z.string().regex(/^(\d+)?$/, "expected a sub-window index or empty"), z.number().int().min(1), z.number().int().min(1), z.number().int().min(0).max(60)]))
    .max(10_000),
});
export type ReplicationMessage = z.infer<typeof replicationMessageSchema>;

export function encodeReplication(region: string, batch: OutboxBatch): ReplicationMessage {
  return { v: 1, region, firstAdmitMs: batch.firstAdmitMs, entries: batch.entries.map((e) => [e.key, e.field, e.units, e.expireAtMs, e.subWindows]) };
}

export function decodeReplication(message: ReplicationMessage): ReplicatedUnits[] {
  return message.entries.map(([key, field, units, expireAtMs, subWindows]) => ({ key, field, units, expireAtMs, subWindows }));
}
