/**
 * The decision servers' side of the usage aggregates (their format: ./usage-format.ts).
 *
 * Decision servers aggregate in process and flush once a second, not per decision: one script
 * call per minute touched and per FLUSH_CHUNK_FIELDS fields, sent one after the other (see
 * {@link UsageRecorder.send}): repeated denials answered from the deny cache then cost
 * no Redis command at all, and the Redis cost of accounting does not grow with traffic. The minute
 * is the store's clock (Redis TIME) when the store answered, else the local clock. Each flush is
 * applied exactly once, also when it is resent after a lost reply: its id is recorded in
 * `<p>{u:<minute>}:usage:flushes` (same TTL) by the script that adds its counts.
 */
import { createHash, randomUUID } from "node:crypto";
import { keys } from "./keys";
import { isNoScript, type RedisClient as RedisLike } from "./client";
import { USAGE_OUTCOMES, type UsageError, type UsageEvent, type UsageOutcome, type UsageSink } from "../decision/ports";
import { LATENCY_BUCKETS_MS, latencyBucketIndex, minuteStartMs, USAGE_TTL_SECONDS, usageFields } from "./usage-format";

export type { RedisLike };

// The engine's usage port (lib/decision/ports.ts) is what this recorder implements.
export { KEY_PREFIX_LENGTH, USAGE_ERRORS, USAGE_OUTCOMES, type UsageError, type UsageEvent, type UsageOutcome } from "../decision/ports";

/** The latency fields, by outcome and bucket index. */
const LATENCY_FIELDS = {
  allowed: Array.from({ length: LATENCY_BUCKETS_MS.length + 1 }, (_, i) => usageFields.latency("allowed", i)),
  denied: Array.from({ length: LATENCY_BUCKETS_MS.length + 1 }, (_, i) => usageFields.latency("denied", i)),
};
/** How many distinct field cells the recorder remembers names for. */
const FIELD_CACHE_CELLS = 50_000;

/**
 * Applies one flush of one minute exactly once: KEYS[1] the minute's hash, KEYS[2] the minute's
 * flush ids (same slot); ARGV[1] the flush id, ARGV[2] the TTL, then field, count pairs. A flush id
 * seen before is skipped, so resending a flush whose reply was lost counts nothing twice.
 */
const FLUSH_LUA = `if redis.call('HSETNX', KEYS[2], ARGV[1], 1) == 0 then return 0 end
redis.call('EXPIRE', KEYS[2], ARGV[2])
for i = 3, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1`;
const FLUSH_SHA = createHash("sha1").update(FLUSH_LUA).digest("hex");
/** Fields per flush script call: about half a millisecond of Redis each. */
export const FLUSH_CHUNK_FIELDS = 256;

type MinuteCounts = Map<number, Map<string, number>>;

/** A usage field and its count in the minute in progress (UsageRecorder's cells). */
class Cell {
  count = 0;
  constructor(readonly field: string) {}
}

/**
 * In-process aggregation of usage, flushed to Redis by {@link UsageRecorder.flush} (the decision
 * server calls it every second and on shutdown).
 *
 * Exactly once, because billing counts on it: every flush carries an id, and each minute's counts
 * are applied by one script that first records the id in the minute's `:usage:flushes` hash and
 * skips a flush it has seen. A flush that fails (Redis down, a timeout whose reply was lost after
 * Redis applied it) is resent later with the SAME id and the same counts; new counts wait in a new
 * batch until it went through. Minutes older than an hour are dropped on failure so a long outage
 * cannot grow memory without bound (those decisions are then missing from the dashboards, never
 * counted twice).
 */
export class UsageRecorder implements UsageSink {
  private pending: MinuteCounts = new Map();
  /** A flush that failed: resent with its id before anything newer. */
  private unsent: { id: string; counts: MinuteCounts } | null = null;
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly redis: RedisLike | null,
    private readonly prefix?: string,
  ) {}

  private add(minute: number, field: string, by = 1): void {
    let fields = this.pending.get(minute);
    if (!fields) {
      fields = new Map();
      this.pending.set(minute, fields);
    }
    fields.set(field, (fields.get(field) ?? 0) + by);
  }

  // The three fields every decision counts (its decision row, its key prefix, its latency bucket)
  // are cells: a field name and its count for the minute in progress, interned per (tenant, tier,
  // operation) and (tenant, key prefix), so counting a decision is three increments, not three
  // field names looked up and three map updates. fold() moves the counts into `pending` when the
  // minute changes and before every flush or snapshot. Bounded: dropped past FIELD_CACHE_CELLS
  // (cells still counting stay in `dirty` until folded).
  private readonly decisionCells = new Map<string, Map<string, Map<string, Record<UsageOutcome, Cell>>>>();
  private readonly keyCells = new Map<string, Map<string, { allowed: Cell; denied: Cell }>>();
  private readonly latencyCells = {
    allowed: LATENCY_FIELDS.allowed.map((field) => new Cell(field)),
    denied: LATENCY_FIELDS.denied.map((field) => new Cell(field)),
  };
  private fieldCacheCells = 0;
  /** The minute the cells count (NaN: none yet). */
  private cellMinute = NaN;
  /** Cells with a count to fold. */
  private readonly dirty: Cell[] = [];

  private decisionCell(tenant: string, tier: string, operation: string, outcome: UsageOutcome): Cell {
    let byTier = this.decisionCells.get(tenant);
    if (byTier === undefined) this.decisionCells.set(tenant, (byTier = new Map()));
    let byOperation = byTier.get(tier);
    if (byOperation === undefined) byTier.set(tier, (byOperation = new Map()));
    let cells = byOperation.get(operation);
    if (cells === undefined) {
      this.countFieldCell();
      cells = Object.fromEntries(USAGE_OUTCOMES.map((o) => [o, new Cell(usageFields.decision(tenant, tier, operation, o))])) as Record<UsageOutcome, Cell>;
      byOperation.set(operation, cells);
    }
    return cells[outcome];
  }

  private keyCell(tenant: string, keyPrefix: string, outcome: "allowed" | "denied"): Cell {
    let byPrefix = this.keyCells.get(tenant);
    if (byPrefix === undefined) this.keyCells.set(tenant, (byPrefix = new Map()));
    let cells = byPrefix.get(keyPrefix);
    if (cells === undefined) {
      this.countFieldCell();
      cells = { allowed: new Cell(usageFields.key(tenant, keyPrefix, "allowed")), denied: new Cell(usageFields.key(tenant, keyPrefix, "denied")) };
      byPrefix.set(keyPrefix, cells);
    }
    return cells[outcome];
  }

  private countFieldCell(): void {
    if (++this.fieldCacheCells > FIELD_CACHE_CELLS) {
      this.decisionCells.clear();
      this.keyCells.clear();
      this.fieldCacheCells = 1;
    }
  }

  /** One more on a cell, in `minute`. */
  private bump(minute: number, cell: Cell): void {
    if (minute !== this.cellMinute) {
      this.fold();
      this.cellMinute = minute;
    }
    if (cell.count++ === 0) this.dirty.push(cell);
  }

  /** Moves the cells' counts into `pending`. */
  private fold(): void {
    const dirty = this.dirty;
    for (let i = 0; i < dirty.length; i++) {
      const cell = dirty[i]!;
      this.add(this.cellMinute, cell.field, cell.count);
      cell.count = 0;
    }
    dirty.length = 0;
  }

  record(event: UsageEvent): void {
    const minute = minuteStartMs(event.atMs);
    const tenant = event.tenant ?? "_";
    this.bump(minute, this.decisionCell(tenant, event.tier ?? "_", event.operation ?? "*", event.outcome));
    if (event.units !== undefined && event.units !== 1 && event.outcome !== "denied" && event.tenant !== null) {
      this.add(minute, usageFields.extraUnits(tenant, event.tier ?? "_", event.operation ?? "*", event.outcome), event.units - 1);
    }
    const binary = event.outcome === "denied" ? "denied" : "allowed";
    this.bump(minute, this.keyCell(tenant, event.keyPrefix ?? "_", binary));
    this.bump(minute, this.latencyCells[binary][latencyBucketIndex(event.latencyMs)]!);
    // Only for a known tenant: the quota belongs to it, and unknown keys never reach a quota check.
    if (event.deniedQuota && event.outcome === "denied" && event.tenant !== null) {
      this.add(minute, usageFields.quotaDenied(tenant, event.deniedQuota));
    }
    if (event.deniedLimit && event.outcome === "denied" && event.tenant !== null) {
      this.add(minute, usageFields.limitDenied(tenant, event.tier ?? "_", event.operation ?? "*", event.deniedLimit));
    }
    if (event.deniedReason && event.outcome === "denied") this.add(minute, usageFields.denialReason(tenant, event.tier ?? "_", event.deniedReason));
    if (event.accuracy) {
      const tier = event.tier ?? "_";
      for (const a of event.accuracy) {
        this.add(minute, usageFields.accuracy(tier, a.limit, "sampled"));
        if (a.limitAdmitted) this.add(minute, usageFields.accuracy(tier, a.limit, "limit"));
        if (a.exactAdmitted) this.add(minute, usageFields.accuracy(tier, a.limit, "exact"));
      }
    }
  }

  recordError(atMs: number, error: UsageError): void {
    this.add(minuteStartMs(atMs), usageFields.error(error));
  }

  /** The counts not yet in Redis: new ones plus a failed flush's (for tests and single-node sinks). */
  snapshot(): MinuteCounts {
    this.fold();
    if (!this.unsent) return this.pending;
    const all: MinuteCounts = new Map();
    for (const source of [this.unsent.counts, this.pending]) {
      for (const [minute, fields] of source) {
        const into = all.get(minute) ?? new Map<string, number>();
        for (const [field, count] of fields) into.set(field, (into.get(field) ?? 0) + count);
        all.set(minute, into);
      }
    }
    return all;
  }

  /**
   * Sends one flush (idempotent per id and minute). Exposed for the exactly-once test.
   *
   * One script call per minute and per FLUSH_CHUNK_FIELDS fields, each with its own id
   * (`<flush id>:<chunk>`), one after the other. With 100k API keys a minute's flush holds thousands
   * of per-key fields: as one call it held Redis for 11–27 ms every second (SLOWLOG), and encoding
   * it held this process's event loop for 6–11 ms; either way, in front of every decision. Chunks
   * are cut the same way when a failed flush is resent (same counts, same order), so each is still
   * applied exactly once.
   */
  async send(id: string, counts: MinuteCounts): Promise<void> {
    const redis = this.redis;
    if (!redis) return;
    const p = this.prefix;
    for (const [minute, fields] of counts) {
      const key = p === undefined ? keys.usageMinute(minute) : keys.usageMinute(minute, p);
      let chunk = 0;
      let args: (string | number)[] = [];
      for (const [field, count] of fields) {
        args.push(field, count);
        if (args.length >= FLUSH_CHUNK_FIELDS * 2) {
          await this.applyChunk(redis, key, `${id}:${chunk++}`, args);
          args = [];
        }
      }
      if (args.length > 0 || chunk === 0) await this.applyChunk(redis, key, `${id}:${chunk}`, args);
      await redis.sadd(p === undefined ? keys.usageMinutes() : keys.usageMinutes(p), String(minute));
    }
  }

  /** EVALSHA; after NOSCRIPT (a restart, SCRIPT FLUSH) SCRIPT LOAD and EVALSHA again, then (on a
   * Cluster node the load did not reach) EVAL. A chunk id seen before is skipped by the script. */
  private async applyChunk(redis: RedisLike, key: string, chunkId: string, args: (string | number)[]): Promise<void> {
    const keysAndArgs = [key, `${key}:flushes`, chunkId, USAGE_TTL_SECONDS, ...args];
    const bySha = () =>
      redis.evalsha(FLUSH_SHA, 2, ...keysAndArgs).then(
        () => true,
        (error: unknown) => {
          if (isNoScript(error)) return false;
          throw error;
        },
      );
    if (await bySha()) return;
    await redis.script("LOAD", FLUSH_LUA).catch(() => undefined);
    if (await bySha()) return;
    await redis.eval(FLUSH_LUA, 2, ...keysAndArgs);
  }

  async flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    this.fold();
    if (!this.redis || (this.pending.size === 0 && !this.unsent)) return;
    let batch = this.unsent;
    if (!batch) {
      batch = { id: randomUUID(), counts: this.pending };
      this.pending = new Map();
    }
    const current = batch;
    this.flushing = (async () => {
      try {
        await this.send(current.id, current.counts);
        this.unsent = null;
      } catch {
        const cutoff = minuteStartMs(Date.now()) - 3_600_000;
        for (const minute of current.counts.keys()) if (minute < cutoff) current.counts.delete(minute);
        for (const minute of this.pending.keys()) if (minute < cutoff) this.pending.delete(minute);
        this.unsent = current.counts.size > 0 ? current : null;
      } finally {
        this.flushing = null;
      }
    })();
    return this.flushing;
  }
}
