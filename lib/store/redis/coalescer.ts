/**
 * Coalescing (standalone Redis): the decisions of one event-loop turn go to Redis as ONE DECIDE
 * call, which decides them one after the other, each all-or-nothing, as if they came one by one.
 * What it buys: the script call, Redis TIME, encoding and parsing paid once per turn (Redis CPU per
 * decision: 22 µs at one per call, 6.9 µs at twelve; docs/benchmarks.md), where the plain version
 * (a Redis Cluster's) makes one call per decision. Bounded: one call never holds Redis long.
 */
import type { DecisionInput, DecisionResult } from "./codec";
import { type CallClock, watchCall, type Waiting } from "./deadline";
import { watchLoopDelay } from "../../net/loop-delay";

const MAX_DECISIONS_PER_CALL = 128;
const MAX_CHECKS_PER_CALL = 1_024;

/** A decision waiting for the turn's call (one shape for all: the fields of DecisionInput and Waiting). */
interface Pending extends DecisionInput, Waiting {
  resolve(result: DecisionResult): void;
}

export interface CoalescerDeps {
  /** One DECIDE call of these decisions: a result or that decision's error, per decision in order. */
  call(batch: readonly DecisionInput[]): Promise<(DecisionResult | Error)[]>;
  /** A result that arrived after its decision had timed out: its caller was answered without it. */
  late(result: DecisionResult): void;
  maxWaitMs: number;
}

export interface Coalescer {
  /** Decides with the other decisions of this turn; `timeoutMs`: the decision's store budget. */
  submit(checks: DecisionInput["checks"], cost: number, flags: number, timeoutMs: number | undefined): Promise<DecisionResult>;
  /** Sends the queued decisions now: from the check phase itself (the gRPC server), `submit`'s call would wait a loop iteration. */
  flush(): void;
}

export function createCoalescer(deps: CoalescerDeps): Coalescer {
  let queue: Pending[] = [];
  let scheduled = false;
  /** When Redis last answered one of these calls (performance.now()): the deadline's sign that it is up. */
  let lastAnswerAtMs = -Infinity;
  const clock: CallClock = { lastAnswerAtMs: () => lastAnswerAtMs, maxWaitMs: deps.maxWaitMs };
  // Watching the event loop from the start, so that the first burst is judged with it too.
  watchLoopDelay();

  /** Sends one call of these decisions and answers each, unless its deadline answered it first. */
  function send(chunk: Pending[]): void {
    let answered = false;
    const cancel = watchCall(chunk, () => answered, clock);
    deps.call(chunk).then(
      (results) => {
        lastAnswerAtMs = performance.now();
        answered = true;
        cancel();
        for (let i = 0; i < chunk.length; i++) {
          const p = chunk[i]!;
          const r = results[i]!;
          if (p.settled) {
            if (!(r instanceof Error)) deps.late(r);
            continue;
          }
          p.settled = true;
          if (r instanceof Error) p.reject(r);
          else p.resolve(r);
        }
      },
      (error: unknown) => {
        answered = true;
        cancel();
        const e = error instanceof Error ? error : new Error(String(error));
        for (const p of chunk) {
          if (p.settled) continue;
          p.settled = true;
          p.reject(e);
        }
      },
    );
  }

  /** The queued decisions, in calls of at most MAX_DECISIONS_PER_CALL decisions and MAX_CHECKS_PER_CALL checks. */
  function flush(): void {
    scheduled = false;
    const pending = queue;
    queue = [];
    inChunks(pending, MAX_DECISIONS_PER_CALL, MAX_CHECKS_PER_CALL, (p) => p.checks.length, send);
  }

  return {
    flush() {
      if (queue.length > 0) flush();
    },
    submit(checks, cost, flags, timeoutMs) {
      return new Promise<DecisionResult>((resolve, reject) => {
        queue.push({ checks, cost, flags, timeoutMs, settled: false, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
  };
}

/**
 * Hands `items` to `send` in order, in chunks of at most `maxItems` items whose `size`s add up to at
 * most `maxSize` (an item larger than that goes alone); all of them as they are when they fit in one.
 */
export function inChunks<T>(items: T[], maxItems: number, maxSize: number, size: (item: T) => number, send: (chunk: T[]) => void): void {
  for (let from = 0; from < items.length; ) {
    let to = from;
    let total = 0;
    while (to < items.length && to - from < maxItems && (to === from || total + size(items[to]!) <= maxSize)) total += size(items[to++]!);
    send(from === 0 && to === items.length ? items : items.slice(from, to));
    from = to;
  }
}
