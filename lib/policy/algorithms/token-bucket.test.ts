import { describe, expect, it } from "vitest";
import { leakyBucket } from "./leaky-bucket";
import { tokenBucket } from "./token-bucket";
import { drive, limitOf } from "../testing/limits";

describe("token_bucket (pure GCRA)", () => {
  const limit = limitOf({ limit: 3, windowMs: 1_000, burst: 5 });

  it("starts full with burst and refills limit per window, continuously", () => {
    const a = drive(tokenBucket, limit, undefined, 0, 7);
    expect(a.allowed).toEqual([true, true, true, true, true, false, false]);
    // one token every 333⅓ ms: not yet at 333, at 334 yes
    expect(tokenBucket(a.state, limit, { nowMs: 333, cost: 1 }).outcome).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(tokenBucket(a.state, limit, { nowMs: 334, cost: 1 }).outcome.allowed).toBe(true);
    expect(tokenBucket(a.state, limit, { nowMs: 10_000, cost: 5 }).outcome).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("no 2× burst at a window edge: at most burst + what refilled", () => {
    const a = drive(tokenBucket, limit, undefined, 999, 10);
    const b = drive(tokenBucket, limit, a.state, 1_000, 10);
    expect([...a.allowed, ...b.allowed].filter(Boolean)).toHaveLength(5);
  });
});

describe("leaky_bucket (pure)", () => {
  it("shapes in delay mode: waits up to maxDelay, then denies with an honest retry", () => {
    const limit = limitOf({ limit: 10, windowMs: 1_000, burst: 1, mode: "delay", maxDelayMs: 300 });
    let state;
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = leakyBucket(state, limit, { nowMs: 0, cost: 1 });
      delays.push(r.outcome.allowed ? r.outcome.delayMs : -r.outcome.retryAfterMs);
      if (r.outcome.allowed) state = r.nextState;
    }
    expect(delays).toEqual([0, 100, 200, 300, -100]);
    expect(leakyBucket(state, limit, { nowMs: 100, cost: 1 }).outcome).toMatchObject({ allowed: true, delayMs: 300 });
  });
});
