/**
 * The store budget of a DECIDE call (CheckOptions.timeoutMs; docs/failure-modes.md), one deadline per
 * call, not a timer per request: from when the call is sent, judged after the next I/O phase
 * (lib/net/timeout.ts) so that a reply that arrived while this process was busy is read first.
 */
import { loopLateMaxMs } from "../../net/loop-delay";
import { deadline } from "../../net/timeout";
import { StoreTimeoutError } from "../types";

/** A decision waiting for its call's reply. */
export interface Waiting {
  /** The decision's store budget (ms); undefined: none. */
  timeoutMs: number | undefined;
  /** Answered (or timed out) already. */
  settled: boolean;
  reject(error: Error): void;
}

export interface CallClock {
  /** When Redis last answered a DECIDE call of this store (performance.now()); -Infinity: never. */
  lastAnswerAtMs(): number;
  /** The longest a decision with a budget waits while Redis keeps answering (ms). */
  maxWaitMs: number;
}

/** Watches the budget of a call being sent: rejects each waiting decision with StoreTimeoutError when its time is up; returns the cancel. */
export function watchCall(waiting: readonly Waiting[], answered: () => boolean, clock: CallClock): () => void {
  let budgetMs = Infinity;
  for (const w of waiting) if (w.timeoutMs !== undefined && w.timeoutMs < budgetMs) budgetMs = w.timeoutMs;
  if (budgetMs === Infinity) return () => undefined;
  const sentAtMs = performance.now();
  let cancel = () => undefined as void;
  let dueAtMs = sentAtMs + budgetMs;
  let judgedFromMs = sentAtMs;
  const expire = () => {
    const nowMs = performance.now();
    const waitedMs = nowMs - sentAtMs;
    // A late answer is load, not the store failing, and waits one budget more (up to maxWaitMs) when
    // Redis answered one of our calls within the budget (this call is queued behind others), or when
    // this process ran late by more than half the budget during this very wait (not before it, nor a
    // stall already counted): it did not get the CPU, so likely neither did Redis.
    const starved = nowMs - dueAtMs > budgetMs / 2 || loopLateMaxMs(judgedFromMs) > budgetMs / 2;
    judgedFromMs = nowMs;
    const silentMs = starved ? 0 : nowMs - clock.lastAnswerAtMs();
    let nextMs = Infinity;
    for (const w of waiting) {
      if (w.settled || w.timeoutMs === undefined) continue;
      const limitMs = w.timeoutMs < silentMs ? w.timeoutMs : Math.max(w.timeoutMs, clock.maxWaitMs);
      if (limitMs <= waitedMs) {
        w.settled = true;
        w.reject(new StoreTimeoutError());
      } else {
        // Judge again when this one's limit is up or Redis has been silent for its budget.
        const next = Math.min(limitMs - waitedMs, Math.max(1, w.timeoutMs - silentMs));
        if (next < nextMs) nextMs = next;
      }
    }
    if (nextMs !== Infinity) {
      dueAtMs = nowMs + nextMs;
      cancel = deadline(nextMs, answered, expire);
    }
  };
  cancel = deadline(budgetMs, answered, expire);
  return () => cancel();
}
