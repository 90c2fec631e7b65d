import { describe, expect, it } from "vitest";
import { slidingWindowCounter } from "./sliding-window-counter";
import { drive, limitOf } from "../testing/limits";

describe("sliding_window_counter (pure)", () => {
  it("in a fresh window the N-th request passes and the (N+1)-th is denied, for any precision", () => {
    for (const precision of [1, 2, 3, 10, 60]) {
      const { allowed } = drive(slidingWindowCounter, limitOf({ limit: 7, windowMs: 60_000, precision }), undefined, 120_000, 8);
      expect(allowed, `precision ${precision}`).toEqual([...Array(7).fill(true), false]);
    }
  });

  it("weights the previous window: previous × (1 − elapsed/window) + current, and c − 1 < limit − weighted", () => {
    const limit = limitOf({ limit: 10, windowMs: 1_000 });
    const { state } = drive(slidingWindowCounter, limit, undefined, 500, 10); // previous window: 10
    // At 1 250: weighted = 10 × 0.75 = 7.5 → 7.5 + c − 1 < 10 ⇔ c < 3.5: cost 3 passes, cost 4 does not.
    expect(slidingWindowCounter(state, limit, { nowMs: 1_250, cost: 3 }).outcome.allowed).toBe(true);
    expect(slidingWindowCounter(state, limit, { nowMs: 1_250, cost: 4 }).outcome.allowed).toBe(false);
    expect(slidingWindowCounter(state, limit, { nowMs: 1_250, cost: 1 }).outcome.remaining).toBe(2);
  });

  it("no 2× burst at the window edge", () => {
    const limit = limitOf({ limit: 10, windowMs: 1_000 });
    const a = drive(slidingWindowCounter, limit, undefined, 999, 20);
    const b = drive(slidingWindowCounter, limit, a.state, 1_000, 20);
    expect([...a.allowed, ...b.allowed].filter(Boolean)).toHaveLength(10);
  });

  it("with precision k only the oldest sub-window is weighted, so old traffic leaves sooner", () => {
    const coarse = limitOf({ limit: 10, windowMs: 1_000, precision: 1 });
    const fine = limitOf({ limit: 10, windowMs: 1_000, precision: 4 });
    // 10 requests early in the window [0, 1000). At 1 100 the coarse counter still weighs 10 × 0.9 = 9
    // of them; with 4 sub-windows of 250 ms only sub-window [0, 250) is left, weighing 10 × 0.6 = 6.
    const c = drive(slidingWindowCounter, coarse, undefined, 10, 10);
    const f = drive(slidingWindowCounter, fine, undefined, 10, 10);
    expect(drive(slidingWindowCounter, coarse, c.state, 1_100, 10).allowed.filter(Boolean)).toHaveLength(1);
    expect(drive(slidingWindowCounter, fine, f.state, 1_100, 10).allowed.filter(Boolean)).toHaveLength(4);
  });
});
