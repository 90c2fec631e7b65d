/**
 * The in-process counter store (single-process mode, the UI's simulator): the pure algorithms over a
 * Map with expiry, all-or-nothing in two phases like DECIDE; one check() runs at a time, so no locks.
 */
import { evaluateCheck, releaseLease, slidingWindowLog, type AnyState, type EngineResult } from "../policy/algorithms";
import { refundMark, refundState, type RefundMark } from "../policy/algorithms/refund";
import type { SlidingLogState } from "../policy/algorithms/sliding-window-log";
import type { ConcurrencyState } from "../policy/algorithms/concurrency";
import type { QuotaState } from "../policy/algorithms/quota";
import { carriedCounterKey, pickSlot } from "../policy/quota-window";
import { ForgedLeaseError, formatLeaseId, newLeaseToken, parseLeaseId } from "./lease-id";
import { formatReservationId, parseReservationId, RESERVATION_TTL_MS } from "./reservation";
import type { AccuracySample, CheckOptions, CheckOutcome, CounterStore, LimitCheck, SettleResult, StoreDecision } from "./types";

export interface MemoryStoreOptions {
  /** The store's clock in ms (default Date.now); simulations and tests pass their own. */
  clock?: () => number;
}

export interface MemoryCounterStore extends CounterStore {
  /** Live (unexpired) counters, for tests and the simulator. */
  size(): number;
  /** Quota counters by their Redis key names (`<quota key>:<period label>`), 0 for any other key: GET /v1/usage in single-node mode. */
  readQuotaCounters(keys: readonly string[]): Map<string, number>;
}

interface Entry {
  state: AnyState;
  expiresAtMs: number;
}

/** A committed `reserve` decision: what each check wrote, until settled or RESERVATION_TTL_MS. */
interface Reservation {
  cost: number;
  committed: { check: LimitCheck; mark: RefundMark }[];
  expiresAtMs: number;
  settled?: { actualCost: number; refunded: number };
}

export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryCounterStore {
  const clock = options.clock ?? Date.now;
  const entries = new Map<string, Entry>();
  const reservations = new Map<string, Reservation>();
  /** `<quota key>:<label>` → where that period's state lives, so quotas can be read by their Redis names (one key per period). */
  const quotaLabels = new Map<string, { key: string; startMs: number }>();
  let lastSweepMs = 0;

  function read(key: string, nowMs: number): AnyState | undefined {
    const entry = entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAtMs <= nowMs) {
      entries.delete(key);
      return undefined;
    }
    return entry.state;
  }

  function write(key: string, state: AnyState | undefined, expiresAtMs: number, nowMs: number): void {
    if (state === undefined || expiresAtMs <= nowMs) entries.delete(key);
    else entries.set(key, { state, expiresAtMs });
  }

  function sweep(nowMs: number): void {
    // Amortised: expired entries of subjects never seen again would otherwise stay forever.
    if (nowMs - lastSweepMs < 1_000 && entries.size < 100_000) return;
    lastSweepMs = nowMs;
    for (const [key, entry] of entries) if (entry.expiresAtMs <= nowMs) entries.delete(key);
    for (const [token, r] of reservations) if (r.expiresAtMs <= nowMs) reservations.delete(token);
    for (const [label, q] of quotaLabels) if (!entries.has(q.key)) quotaLabels.delete(label);
  }

  /** The accuracy meter's exact log at `<key>:x` (twin of lib/store/lua/exact-log.ts): the pure sliding_window_log of the same limit. */
  function exactLogSample(check: LimitCheck, result: EngineResult, denying: number, nowMs: number, cost: number): AccuracySample {
    const logKey = `${check.key}:x`;
    const exact = slidingWindowLog(read(logKey, nowMs) as SlidingLogState | undefined, check, { nowMs, cost });
    const others = denying - (result.outcome.allowed ? 0 : 1) === 0;
    const sample = { limitAdmitted: others && result.consumes, exactAdmitted: others && exact.outcome.allowed };
    if (sample.exactAdmitted) write(logKey, exact.nextState, exact.expiresAtMs, nowMs);
    return sample;
  }

  /** A quota's carried counter (a plan change under `full`) in the slot the clock picks: its units there, else 0. */
  function carriedUsed(check: LimitCheck, nowMs: number): number | undefined {
    if (check.quotaWindow === undefined) return undefined;
    const slot = pickSlot(check.quotaWindow, nowMs);
    if (slot.carry === "") return undefined;
    const state = read(carriedCounterKey(check.key, slot.carry), nowMs) as QuotaState | undefined;
    return state !== undefined && state.periodStartMs === slot.startMs ? state.used : 0;
  }

  return {
    async check(checks: readonly LimitCheck[], { cost, dryRun, reserve }: CheckOptions): Promise<StoreDecision> {
      const nowMs = clock();
      sweep(nowMs);
      const evaluated: { check: LimitCheck; result: EngineResult; token?: string }[] = checks.map((check) => {
        const token = check.algorithm === "concurrency" ? newLeaseToken() : undefined;
        return { check, token, result: evaluateCheck(read(check.key, nowMs), check, { nowMs, cost, leaseToken: token, carriedUsed: carriedUsed(check, nowMs) }) };
      });
      const allowed = evaluated.every((e) => e.result.outcome.allowed);
      const commit = allowed && !dryRun;
      const denying = evaluated.filter((e) => !e.result.outcome.allowed).length;
      const reserved: Reservation["committed"] = [];
      const outcomes: CheckOutcome[] = evaluated.map(({ check, result, token }) => {
        const consumed = commit && result.consumes;
        if (consumed) write(check.key, result.nextState, result.expiresAtMs, nowMs);
        else if (!dryRun && result.activityState) write(check.key, result.activityState, result.expiresAtMs, nowMs);
        if (consumed && check.quotaWindow !== undefined) {
          const slot = pickSlot(check.quotaWindow, nowMs);
          quotaLabels.set(`${check.key}:${slot.label}`, { key: check.key, startMs: slot.startMs });
        }
        const mark = consumed && reserve ? refundMark(check, result.nextState, nowMs, token) : null;
        if (mark) reserved.push({ check, mark });
        const outcome: CheckOutcome = { ...result.outcome };
        if (!consumed) outcome.remaining = result.idleRemaining;
        if (consumed && token) outcome.leaseId = formatLeaseId(token, cost, check.key);
        if (!consumed) delete outcome.overage;
        if (check.exactLog && !dryRun) outcome.accuracy = exactLogSample(check, result, denying, nowMs, cost);
        return outcome;
      });
      if (reserved.length === 0) return { nowMs, allowed, outcomes };
      const token = newLeaseToken();
      reservations.set(token, { cost, committed: reserved, expiresAtMs: nowMs + RESERVATION_TTL_MS });
      return { nowMs, allowed, outcomes, reservationId: formatReservationId(token, [`memory:rsv:${token}`]) };
    },

    async settle(reservationId: string, actualCost: number): Promise<SettleResult> {
      const nowMs = clock();
      const id = parseReservationId(reservationId);
      const r = id ? reservations.get(id.token) : undefined;
      if (!r || r.expiresAtMs <= nowMs) return { status: "unknown", reservedCost: 0, actualCost, refunded: 0 };
      if (r.settled) {
        const status = r.settled.actualCost === actualCost ? "replayed" : "conflict";
        return { status, reservedCost: r.cost, actualCost: r.settled.actualCost, refunded: r.settled.refunded };
      }
      const units = Math.max(0, r.cost - actualCost);
      for (const { check, mark } of r.committed) {
        const entry = entries.get(check.key);
        const state = read(check.key, nowMs);
        // A refund never moves an expiry (nor creates state): the Redis twin keeps the key's TTL.
        if (entry && state !== undefined) entries.set(check.key, { state: refundState(state, check, mark, units) ?? state, expiresAtMs: entry.expiresAtMs });
      }
      r.settled = { actualCost, refunded: units };
      return { status: "settled", reservedCost: r.cost, actualCost, refunded: units };
    },

    async release(leaseId: string): Promise<boolean> {
      const lease = parseLeaseId(leaseId);
      if (!lease) return false;
      const nowMs = clock();
      const entry = entries.get(lease.key);
      const { status, nextState } = releaseLease(read(lease.key, nowMs) as ConcurrencyState | undefined, lease.token, lease.cost, nowMs);
      if (status === "forged") throw new ForgedLeaseError();
      if (status === "released" && entry) write(lease.key, nextState, entry.expiresAtMs, nowMs);
      return status === "released";
    },

    readQuotaCounters(keys: readonly string[]): Map<string, number> {
      const nowMs = clock();
      const out = new Map<string, number>();
      for (const k of keys) {
        const q = quotaLabels.get(k);
        const state = q ? (read(q.key, nowMs) as QuotaState | undefined) : undefined;
        out.set(k, q && state !== undefined && state.periodStartMs === q.startMs ? state.used : 0);
      }
      return out;
    },

    size(): number {
      const nowMs = clock();
      let live = 0;
      for (const entry of entries.values()) if (entry.expiresAtMs > nowMs) live++;
      return live;
    },

    async close(): Promise<void> {
      entries.clear();
    },
  };
}
