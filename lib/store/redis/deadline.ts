/**
 * The store budget of a DECIDE call (CheckOptions.timeoutMs), judged once per call, not with a
 * timer per request: it starts when the call is sent, so the time a decision queued inside this
 * process before that is not charged to the store, and it is judged after the next I/O phase
 * (lib/net/timeout.ts), so a reply that arrived while this process was busy is read before anyone
 * is timed out. Decisions without a budget (fail-closed operations) keep waiting for the reply or
 * the connection's command timeout.
 *
 * Past the budget the deadline re-judges rather than fail at once when the lateness looks like
 * load, not a failing store (see `expire`), one budget at a time up to the longest any decision
 * waits (maxWaitMs).
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

/**
 * Watches one call's budget from now (the call is being sent); `answered()` tells whether its reply
 * came. Rejects each waiting decision with StoreTimeoutError when its time is up. Returns the
 * cancel, for when the reply arrives.
 */
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
    // Two signs that a late answer is load, not the store failing — then keep waiting, one budget
    // at a time up to maxWaitMs, instead of failing open:
    // - Redis answered one of our calls within the budget: it is up and working through what it
    //   was sent (this call is queued behind others);
    // - this process could not run on time by more than half the budget during this very wait
    //   (since it was sent or last judged: this deadline ran late, or the event loop stalled): it
    //   did not get the CPU, so neither, likely, did Redis on the same machine; the wait measured
    //   the machine, not the store. Only a stall inside the wait counts: one before it, or one
    //   already counted, says nothing about this reply (counting them kept every call of a hung
    //   Redis waiting 1 s on a machine whose loop stalls now and then).
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
