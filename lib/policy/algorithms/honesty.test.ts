/**
 * Properties every algorithm keeps, on fast-check random histories: a denied request changes no
 * state; retryAfterMs is honest (the same request after that wait passes, nothing else consuming)
 * and, for the windowed algorithms, tight (1 ms earlier it is still denied); cost > limit is
 * cost_exceeds_limit with no retry; shadow never denies.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { evaluateCheck, type AnyState, type EngineCheck } from "./index";

const ALGS = ["fixed_window", "sliding_window_log", "sliding_window_counter", "token_bucket", "leaky_bucket", "concurrency", "quota"] as const;

const checkArb = fc
  .record({
    algorithm: fc.constantFrom(...ALGS),
    limit: fc.integer({ min: 1, max: 15 }),
    windowMs: fc.constantFrom(10, 1_000, 60_000),
    burst: fc.integer({ min: 1, max: 15 }),
    precision: fc.integer({ min: 1, max: 6 }),
    mode: fc.constantFrom("reject", "delay"),
    maxDelayMs: fc.integer({ min: 0, max: 500 }),
    leaseTtlMs: fc.integer({ min: 1, max: 2_000 }),
    period: fc.constantFrom("day", "month"),
  })
  .map((c): EngineCheck => {
    const bucket = c.algorithm === "token_bucket" || c.algorithm === "leaky_bucket";
    return { ...c, mode: bucket ? c.mode : "reject", maxDelayMs: bucket && c.mode === "delay" ? c.maxDelayMs : 0, overage: "block" };
  });

const historyArb = fc.array(fc.record({ dtMs: fc.integer({ min: 0, max: 700 }), cost: fc.integer({ min: 1, max: 4 }) }), { maxLength: 40 });

function replay(check: EngineCheck, history: { dtMs: number; cost: number }[], startMs: number) {
  let state: AnyState | undefined;
  let nowMs = startMs;
  let n = 0;
  for (const h of history) {
    nowMs += h.dtMs;
    const r = evaluateCheck(state, check, { nowMs, cost: h.cost, leaseToken: `l${n++}` });
    if (r.consumes) state = r.nextState;
  }
  return { state, nowMs };
}

describe("every algorithm (pure), on random histories", () => {
  it("a denial changes nothing, and retryAfterMs is honest (and tight for windows and buckets)", () => {
    fc.assert(
      fc.property(checkArb, historyArb, fc.integer({ min: 1, max: 4 }), fc.integer({ min: 0, max: 1e12 }), (check, history, cost, startMs) => {
        const { state, nowMs } = replay(check, history, startMs);
        const r = evaluateCheck(state, check, { nowMs, cost, leaseToken: "x" });
        if (r.outcome.allowed) return;
        expect(r.nextState).toBe(state);
        if (r.outcome.reason === "cost_exceeds_limit") {
          expect(r.outcome.retryAfterMs).toBe(0);
          return;
        }
        expect(r.outcome.retryAfterMs).toBeGreaterThan(0);
        const later = evaluateCheck(state, check, { nowMs: nowMs + r.outcome.retryAfterMs, cost, leaseToken: "y" });
        expect(later.outcome.allowed).toBe(true);
        if (check.algorithm !== "concurrency" && check.algorithm !== "quota") {
          const early = evaluateCheck(state, check, { nowMs: nowMs + r.outcome.retryAfterMs - 1, cost, leaseToken: "z" });
          expect(early.outcome.allowed).toBe(false);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it("a cost above the limit (or burst) is denied as cost_exceeds_limit, and shadow mode never denies", () => {
    fc.assert(
      fc.property(checkArb, historyArb, (check, history) => {
        const { state, nowMs } = replay(check, history, 1_700_000_000_000);
        const max = check.algorithm === "token_bucket" || check.algorithm === "leaky_bucket" ? check.burst : check.limit;
        expect(evaluateCheck(state, check, { nowMs, cost: max + 1, leaseToken: "x" }).outcome).toMatchObject({
          allowed: false,
          reason: "cost_exceeds_limit",
          retryAfterMs: 0,
        });
        const shadow = evaluateCheck(state, { ...check, mode: "shadow", maxDelayMs: 0 }, { nowMs, cost: max + 1, leaseToken: "x" });
        expect(shadow.outcome).toMatchObject({ allowed: true, reason: "ok", shadowDenied: true });
        expect(shadow.consumes).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});
