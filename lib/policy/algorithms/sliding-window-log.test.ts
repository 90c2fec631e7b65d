import { describe, expect, it } from "vitest";
import { slidingWindowLog } from "./sliding-window-log";
import { drive, limitOf } from "../testing/limits";

describe("sliding_window_log (pure)", () => {
  const limit = limitOf({ limit: 3, windowMs: 1_000 });

  it("counts the cost in (now − window, now] exactly", () => {
    let s = drive(slidingWindowLog, limit, undefined, 100, 1).state;
    s = drive(slidingWindowLog, limit, s, 600, 2).state;
    expect(slidingWindowLog(s, limit, { nowMs: 1_099, cost: 1 }).outcome).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(slidingWindowLog(s, limit, { nowMs: 1_100, cost: 1 }).outcome.allowed).toBe(true);
    expect(slidingWindowLog(s, limit, { nowMs: 1_100, cost: 2 }).outcome).toMatchObject({ allowed: false, retryAfterMs: 500 });
  });

  it("no burst at any edge: never more than the limit in a window", () => {
    const a = drive(slidingWindowLog, limit, undefined, 999, 5);
    const b = drive(slidingWindowLog, limit, a.state, 1_000, 5);
    expect([...a.allowed, ...b.allowed].filter(Boolean)).toHaveLength(3);
  });
});
