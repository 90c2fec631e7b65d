import { describe, expect, it } from "vitest";
import { fixedWindow } from "./fixed-window";
import { drive, limitOf } from "../testing/limits";

describe("fixed_window (pure)", () => {
  const limit = limitOf({ limit: 3, windowMs: 1_000 });

  it("passes iff count + cost ≤ limit in the epoch-aligned window", () => {
    const { state, allowed } = drive(fixedWindow, limit, undefined, 10_250, 4);
    expect(allowed).toEqual([true, true, true, false]);
    expect(state).toEqual({ windowStartMs: 10_000, count: 3 });
    expect(fixedWindow(state, limit, { nowMs: 10_999, cost: 1 }).outcome).toMatchObject({ allowed: false, retryAfterMs: 1, resetAtMs: 11_000 });
    expect(fixedWindow(state, limit, { nowMs: 11_000, cost: 3 }).outcome).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("a denied request leaves the state as it was", () => {
    const { state } = drive(fixedWindow, limit, undefined, 0, 3);
    expect(fixedWindow(state, limit, { nowMs: 1, cost: 1 }).nextState).toBe(state);
  });

  it("lets 2× the limit through around a window edge (why the sliding algorithms exist)", () => {
    const a = drive(fixedWindow, limit, undefined, 999, 5);
    const b = drive(fixedWindow, limit, a.state, 1_000, 5);
    expect([...a.allowed, ...b.allowed].filter(Boolean)).toHaveLength(6);
  });
});
