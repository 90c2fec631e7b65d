/**
 * The coalescer's turn: the decisions submitted in one event-loop turn go to Redis as one call, at
 * the turn's check phase, or at once when the caller flushes (the gRPC server, #27).
 */
import { describe, expect, it } from "vitest";
import type { LimitCheck } from "../types";
import type { DecisionInput, DecisionResult } from "./codec";
import { createCoalescer, inChunks } from "./coalescer";

const CHECKS = [] as unknown as readonly LimitCheck[];
const RESULT: DecisionResult = { nowMs: 1, allowed: true, outcomes: [], undo: [] };

function recorder() {
  const calls: number[] = [];
  const coalescer = createCoalescer({
    call: (batch: readonly DecisionInput[]) => {
      calls.push(batch.length);
      return Promise.resolve(batch.map(() => RESULT));
    },
    late: () => undefined,
    maxWaitMs: 1_000,
  });
  return { calls, coalescer };
}
const checkPhase = () => new Promise((r) => setImmediate(r));

describe("coalescer", () => {
  it("sends the decisions of one turn as one call, at the turn's check phase", async () => {
    const { calls, coalescer } = recorder();
    const answers = [coalescer.submit(CHECKS, 1, 0, undefined), coalescer.submit(CHECKS, 1, 0, 25)];
    expect(calls).toEqual([]);
    await checkPhase();
    expect(calls).toEqual([2]);
    await expect(Promise.all(answers)).resolves.toEqual([RESULT, RESULT]);
  });

  it("flush() sends what is queued at once, in one call, and the scheduled flush sends nothing again", async () => {
    const { calls, coalescer } = recorder();
    const answers = [coalescer.submit(CHECKS, 1, 0, undefined), coalescer.submit(CHECKS, 2, 0, undefined), coalescer.submit(CHECKS, 1, 0, 25)];
    coalescer.flush();
    expect(calls).toEqual([3]);
    coalescer.flush();
    await checkPhase();
    expect(calls).toEqual([3]);
    await expect(Promise.all(answers)).resolves.toHaveLength(3);
    // A later turn is coalesced as before.
    const later = [coalescer.submit(CHECKS, 1, 0, undefined), coalescer.submit(CHECKS, 1, 0, undefined)];
    await checkPhase();
    expect(calls).toEqual([3, 2]);
    await Promise.all(later);
  });
});

describe("inChunks", () => {
  const chunksOf = (sizes: number[], maxItems: number, maxSize: number) => {
    const chunks: number[][] = [];
    inChunks(sizes, maxItems, maxSize, (n) => n, (c) => chunks.push(c));
    return chunks;
  };

  it("keeps the items in order, each chunk within both bounds; an item over the size bound goes alone", () => {
    expect(chunksOf([1, 1, 1, 1, 1], 2, 100)).toEqual([[1, 1], [1, 1], [1]]);
    expect(chunksOf([3, 3, 3, 1], 10, 6)).toEqual([[3, 3], [3, 1]]);
    expect(chunksOf([2, 9, 2], 10, 5)).toEqual([[2], [9], [2]]);
    expect(chunksOf([], 10, 5)).toEqual([]);
  });

  it("hands over the array itself when it fits in one chunk (no copy on the usual turn)", () => {
    const items = [1, 2, 3];
    let sent: number[] | null = null;
    inChunks(items, 10, 10, (n) => n, (c) => (sent = c));
    expect(sent).toBe(items);
  });
});
