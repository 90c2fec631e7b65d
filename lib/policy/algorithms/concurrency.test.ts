import { describe, expect, it } from "vitest";
import { concurrency, releaseLease } from "./concurrency";
import { limitOf } from "../testing/limits";

describe("concurrency (pure)", () => {
  const limit = limitOf({ limit: 2, windowMs: 0, leaseTtlMs: 1_000 });

  it("holds at most limit units; release frees; expiry frees; retry waits for the first expiry", () => {
    const a = concurrency(undefined, limit, { nowMs: 0, cost: 1, leaseToken: "a" });
    const b = concurrency(a.nextState, limit, { nowMs: 100, cost: 1, leaseToken: "b" });
    const c = concurrency(b.nextState, limit, { nowMs: 200, cost: 1, leaseToken: "c" });
    expect([a.outcome.allowed, b.outcome.allowed, c.outcome.allowed]).toEqual([true, true, false]);
    expect(c.outcome).toMatchObject({ reason: "concurrency_limited", retryAfterMs: 800, resetAtMs: 1_100 });
    expect(releaseLease(b.nextState, "a", 2, 300)).toEqual({ status: "forged", nextState: b.nextState }); // not the units it was granted
    const freed = releaseLease(b.nextState, "a", 1, 300);
    expect(freed.status).toBe("released");
    expect(concurrency(freed.nextState, limit, { nowMs: 300, cost: 1, leaseToken: "d" }).outcome.allowed).toBe(true);
    expect(releaseLease(b.nextState, "a", 1, 1_000).status).toBe("unknown"); // expired
    expect(concurrency(b.nextState, limit, { nowMs: 1_000, cost: 2, leaseToken: "e" }).outcome.allowed).toBe(false);
    expect(concurrency(b.nextState, limit, { nowMs: 1_100, cost: 2, leaseToken: "e" }).outcome.allowed).toBe(true);
  });
});
