/**
 * Taking back part of what a committed request consumed: the pure twin of the SETTLE script
 * (lib/store/lua/settle.ts), used by the memory store; `POST /v1/settle` refunds a reservation's
 * unused units with it (reserve-then-settle, docs/decision-api.md).
 *
 * A refund of `units` on one counter takes back at most that many of the units the reserved
 * request put there, and never below zero; it touches only what that request wrote (its window,
 * sub-window, log entry or lease), so a counter whose window has passed is left alone (a refund
 * there could change nothing), and it never creates state or moves an expiry.
 * - fixed_window, quota: the count of the request's window / period, if it is still the one held;
 * - sliding_window_counter: the request's sub-window count, if still held;
 * - token_bucket, leaky_bucket: the meter's level, by `units × window` (the request's share of it);
 * - sliding_window_log: the request's entry keeps `cost − units` (dropped at 0);
 * - concurrency: the request's lease keeps `cost − units` units (released at 0);
 * - a weighted global cap: the window's total and the tenant's used, if it is still that window.
 */
import type { FairShareState } from "../fair-share";
import type { AnyState, EngineCheck } from "./index";
import type { ConcurrencyState } from "./concurrency";
import type { FixedWindowState } from "./fixed-window";
import type { QuotaState } from "./quota";
import type { SlidingCounterState } from "./sliding-window-counter";
import { subWindowMs } from "./sliding-window-counter";
import type { SlidingLogState } from "./sliding-window-log";
import type { BucketState } from "./token-bucket";

/** What one committed check wrote, enough to take part of it back. */
export type RefundMark =
  | { kind: "window"; startMs: number }
  | { kind: "subwindow"; index: number }
  | { kind: "level" }
  | { kind: "entry"; id: string }
  | { kind: "lease"; token: string }
  | { kind: "share"; windowStartMs: number; member: string };

/** The mark of a check that committed `nextState` at `nowMs` (with `leaseToken` for concurrency). */
export function refundMark(check: EngineCheck, nextState: AnyState | undefined, nowMs: number, leaseToken?: string): RefundMark | null {
  if (nextState === undefined) return null;
  if (check.fairShare) return { kind: "share", windowStartMs: (nextState as FairShareState).windowStartMs, member: check.fairShare.member };
  switch (check.algorithm) {
    case "fixed_window":
      return { kind: "window", startMs: (nextState as FixedWindowState).windowStartMs };
    case "quota":
      return { kind: "window", startMs: (nextState as QuotaState).periodStartMs };
    case "sliding_window_counter":
      return { kind: "subwindow", index: Math.floor(nowMs / subWindowMs(check)) };
    case "token_bucket":
    case "leaky_bucket":
      return { kind: "level" };
    case "sliding_window_log": {
      const entries = (nextState as SlidingLogState).entries;
      return { kind: "entry", id: entries[entries.length - 1]!.id };
    }
    case "concurrency":
      return leaseToken === undefined ? null : { kind: "lease", token: leaseToken };
  }
}

const less = (value: number, units: number) => Math.max(0, value - units);

/** The state with `units` (≥ 0, at most the request's cost) of the marked request taken back. */
export function refundState(state: AnyState | undefined, check: EngineCheck, mark: RefundMark, units: number): AnyState | undefined {
  if (state === undefined || units <= 0) return state;
  switch (mark.kind) {
    case "window": {
      if (check.algorithm === "quota") {
        const s = state as QuotaState;
        return s.periodStartMs === mark.startMs ? { ...s, used: less(s.used, units) } : s;
      }
      const s = state as FixedWindowState;
      return s.windowStartMs === mark.startMs ? { ...s, count: less(s.count, units) } : s;
    }
    case "subwindow": {
      const s = state as SlidingCounterState;
      const held = s.counts[mark.index];
      return held === undefined ? s : { counts: { ...s.counts, [mark.index]: less(held, units) } };
    }
    case "level": {
      const s = state as BucketState;
      return { ...s, level: less(s.level, units * check.windowMs) };
    }
    case "entry": {
      const s = state as SlidingLogState;
      const at = s.entries.findIndex((e) => e.id === mark.id);
      if (at === -1) return s;
      const entry = s.entries[at]!;
      const left = entry.cost - Math.min(units, entry.cost);
      const entries = [...s.entries];
      // The id carries the cost (`<atMs>:<n>:<cost>`, the Lua member), so it changes with it.
      if (left === 0) entries.splice(at, 1);
      else entries[at] = { ...entry, cost: left, id: entry.id.replace(/:\d+$/, `:${left}`) };
      return { entries };
    }
    case "lease": {
      const s = state as ConcurrencyState;
      const lease = s.leases[mark.token];
      if (!lease) return s;
      const leases = { ...s.leases };
      // The lease's units are numbered 1..cost; the refund gives back the highest ones.
      const left = lease.cost - Math.min(units, lease.cost);
      if (left <= 0) delete leases[mark.token];
      else leases[mark.token] = { ...lease, cost: left };
      return { leases };
    }
    case "share": {
      const s = state as FairShareState;
      if (s.windowStartMs !== mark.windowStartMs) return s;
      const used = { ...s.used };
      if (used[mark.member] !== undefined) used[mark.member] = less(used[mark.member]!, units);
      return { ...s, total: less(s.total, units), used };
    }
  }
}
