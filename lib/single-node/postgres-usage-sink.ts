/**
 * Single-node usage sink: the decision server's per-minute aggregates go straight into Postgres,
 * into the same rows the worker's rollup writes from Redis (UsageRollup minute/hour/day, tier
 * totals, key rows, latency and error rows, QuotaUsage, billing adjustments of closed months).
 *
 * Nothing is reimplemented: each decision is aggregated by a UsageRecorder without Redis (the same
 * fields as the Redis hashes, lib/redis/usage-format.ts), one per minute, and a closed minute is written
 * by the rollup's own `commitSlice` (lib/jobs/rollup.ts) as one slice with a random id. The slice's
 * cursor (RollupCursor `usage:<minute>:<id>`) is inserted in the same transaction as its rows, so
 * a commit that is retried after an error or a lost reply is applied exactly once.
 *
 * A minute is sealed (its counts frozen under an id) once it ended GRACE_MS ago, then committed;
 * a decision that lands in a sealed minute afterwards starts a new slice for that minute, committed
 * on the next tick (the rollup adds slices up). `close()` seals and commits every minute, the open
 * one included, so a clean stop (SIGTERM) loses nothing. A crash (SIGKILL, power loss) loses the
 * minute in progress and any minute not yet committed: the dashboards and QuotaUsage miss those
 * decisions; nothing is ever counted twice. While Postgres is unreachable, sealed minutes wait in
 * memory and are retried every tick; those older than MAX_UNSENT_MS are dropped (and logged) so a
 * long outage cannot grow memory without bound.
 */
import { randomUUID } from "node:crypto";
import type { Db } from "../db/client";
import { commitSlice, type ClaimedSlice } from "../jobs/rollup";
import { PolicyHistory } from "../db/quota-defs";
import { UsageRecorder, type UsageError, type UsageEvent } from "../redis/usage";
import { minuteStartMs } from "../redis/usage-format";
import type { UsageSink } from "../decision/ports";
import { messageOf, withQueryTimeout } from "./timeout";

/** A minute is sealed this long after it ended (decisions still in flight at the boundary). */
export const GRACE_MS = 2_000;
/** Sealed minutes older than this are dropped while Postgres stays unreachable. */
export const MAX_UNSENT_MS = 3_600_000;
/** One slice's transaction normally takes milliseconds; past this it is retried (its cursor makes that safe). */
const COMMIT_TIMEOUT_MS = 10_000;
/** How long close() keeps retrying before giving up (a SIGTERM's grace period is typically 30 s). */
const CLOSE_DEADLINE_MS = 15_000;

export interface PostgresUsageSinkOptions {
  db: Db;
  log?: (message: string) => void;
  /** Local clock (ms); the sealing of minutes only. */
  now?: () => number;
}

export interface UsageSinkReport {
  /** Slices written by this call. */
  committed: number;
  /** Slices still waiting (Postgres failed or the rollup lock was busy). */
  waiting: number;
}

export class PostgresUsageSink implements UsageSink {
  /** Minute start → the aggregates of that minute not sealed yet. */
  private readonly open = new Map<number, UsageRecorder>();
  /** Sealed slices, oldest first, each with its id: resent as they are until committed. */
  private sealed: ClaimedSlice[] = [];
  private flushing: Promise<UsageSinkReport> | null = null;
  private failing = false;
  private readonly now: () => number;

  constructor(private readonly options: PostgresUsageSinkOptions) {
    this.now = options.now ?? Date.now;
  }

  private recorderFor(atMs: number): UsageRecorder {
    const minute = minuteStartMs(atMs);
    let recorder = this.open.get(minute);
    if (!recorder) {
      recorder = new UsageRecorder(null);
      this.open.set(minute, recorder);
    }
    return recorder;
  }

  record(event: UsageEvent): void {
    this.recorderFor(event.atMs).record(event);
  }

  recordError(atMs: number, error: UsageError): void {
    this.recorderFor(atMs).recordError(atMs, error);
  }

  /** Slices sealed but not committed yet, plus open minutes (for /readyz and tests). */
  get pendingMinutes(): number {
    return this.sealed.length + this.open.size;
  }

  /** Seals the minutes that closed (every minute when `all`), then commits what is sealed. */
  flush(all = false): Promise<UsageSinkReport> {
    // The once-a-second tick skips while a commit is running; a final flush waits for it, then runs.
    if (this.flushing) return all ? this.flushing.then(() => this.flush(true)) : this.flushing;
    this.flushing = this.commitSealed(all).finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  private seal(all: boolean): void {
    const cutoff = this.now() - 60_000 - GRACE_MS;
    for (const [minute, recorder] of [...this.open].sort((a, b) => a[0] - b[0])) {
      if (!all && minute > cutoff) continue;
      this.open.delete(minute);
      const counts = recorder.snapshot().get(minute);
      if (!counts || counts.size === 0) continue;
      const hash: Record<string, string> = {};
      for (const [field, count] of counts) hash[field] = String(count);
      this.sealed.push({ minuteStartMs: minute, seq: `single-node-${randomUUID()}`, hash });
    }
  }

  private async commitSealed(all: boolean): Promise<UsageSinkReport> {
    this.seal(all);
    let committed = 0;
    if (this.sealed.length === 0) return { committed, waiting: 0 };
    // One policy history per pass: quota definitions of the minutes' live versions.
    const policies = new PolicyHistory(this.options.db);
    while (this.sealed.length > 0) {
      const slice = this.sealed[0]!;
      try {
        const outcome = await withQueryTimeout(commitSlice(this.options.db, slice, policies), `writing usage of ${new Date(slice.minuteStartMs).toISOString()}`, COMMIT_TIMEOUT_MS);
        if (outcome === "locked") break;
        this.sealed.shift();
        committed++;
        if (this.failing) this.options.log?.("usage: PostgreSQL reachable again, pending minutes written");
        this.failing = false;
      } catch (error) {
        // The same slice (same id) is sent again next tick: if this one did commit, its cursor says so.
        if (!this.failing) this.options.log?.(`usage: writing to PostgreSQL failed, will retry: ${messageOf(error)}`);
        this.failing = true;
        this.dropOld();
        break;
      }
    }
    return { committed, waiting: this.sealed.length };
  }

  private dropOld(): void {
    const cutoff = minuteStartMs(this.now()) - MAX_UNSENT_MS;
    const kept = this.sealed.filter((s) => s.minuteStartMs >= cutoff);
    if (kept.length < this.sealed.length) {
      this.options.log?.(`usage: dropped ${this.sealed.length - kept.length} minute slices older than an hour (PostgreSQL unreachable)`);
      this.sealed = kept;
    }
  }

  /** Seals everything, the open minute included, and commits (retrying for a while): for a clean stop. */
  async close(): Promise<UsageSinkReport> {
    const deadline = Date.now() + CLOSE_DEADLINE_MS;
    let report = await this.flush(true);
    for (let attempt = 1; report.waiting > 0 && Date.now() + 200 * attempt < deadline; attempt++) {
      await new Promise((r) => setTimeout(r, 200 * attempt));
      report = await this.flush(true);
    }
    if (report.waiting > 0) this.options.log?.(`usage: ${report.waiting} minute slices could not be written before exit`);
    return report;
  }
}
