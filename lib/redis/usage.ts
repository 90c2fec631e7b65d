/**
 * Per-minute usage aggregates written by the decision servers, drained into Postgres by the
 * rollup worker, read by the dashboards and billing.
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
import { USAGE_ERRORS, USAGE_OUTCOMES, type UsageError, type UsageEvent, type UsageOutcome, type UsageSink } from "../decision/ports";

export type { RedisLike };

// The engine's usage port (lib/decision/ports.ts) is what this recorder implements.
export { KEY_PREFIX_LENGTH, USAGE_ERRORS, USAGE_OUTCOMES, type UsageError, type UsageEvent, type UsageOutcome } from "../decision/ports";

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

/** The latency fields, by outcome and bucket index. */
const LATENCY_FIELDS = {
  allowed: Array.from({ length: LATENCY_BUCKETS_MS.length + 1 }, (_, i) => usageFields.latency("allowed", i)),
  denied: Array.from({ length: LATENCY_BUCKETS_MS.length + 1 }, (_, i) => usageFields.latency("denied", i)),
};
/** How many distinct field cells the recorder remembers names for. */
const FIELD_CACHE_CELLS = 50_000;

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
