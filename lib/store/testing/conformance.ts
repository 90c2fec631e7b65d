/**
 * The conformance suite: the same cases against every CounterStore (memory.test.ts,
 * redis.int.test.ts, redis-cluster.int.test.ts). A harness makes a store whose clock the case
 * controls (the memory store's clock; for Redis, the scripts' test-only `now` override).
 * Every case uses keys of its own, under the harness prefix, in the shapes lib/redis/keys.ts builds.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ForgedLeaseError } from "../lease-id";
import type { CheckOutcome, CounterStore, LimitCheck } from "../types";

export interface ConformanceHarness {
  /** A store reading time from `clock` (ms). */
  makeStore(clock: () => number): CounterStore | Promise<CounterStore>;
  /** Prefix of every key the cases write (e.g. this run's SLUICE_REDIS_PREFIX). */
  prefix: string;
}

/** A clock the case moves by hand. Starts mid-window on a fixed day, so scenarios are repeatable. */
export function manualClock(startMs = Date.UTC(2026, 11, 2, 12, 0, 0, 250)) {
  let nowMs = startMs;
  const clock = () => nowMs;
  return Object.assign(clock, {
    set: (ms: number) => void (nowMs = ms),
    advance: (ms: number) => void (nowMs += ms),
  });
}

type Partial2 = Partial<LimitCheck> & Pick<LimitCheck, "algorithm">;

export function limitCheck(prefix: string, over: Partial2, tenant = "acme"): LimitCheck {
  const id = randomBytes(4).toString("hex");
  return {
    key: `${prefix}{t:${tenant}-${id}}:c:${over.algorithm}-${id}:k1`,
    kind: "limit",
    limit: 5,
    windowMs: 1_000,
    burst: over.burst ?? over.limit ?? 5,
    precision: 1,
    mode: "reject",
    maxDelayMs: 0,
    leaseTtlMs: 10_000,
    ...over,
  };
}

/** A global cap key (another slot than any tenant's on a cluster). */
export function globalCheck(prefix: string, over: Partial<LimitCheck> = {}): LimitCheck {
  const id = randomBytes(4).toString("hex");
  return {
    key: `${prefix}{g:cap-${id}}:g`,
    kind: "global",
    algorithm: "fixed_window",
    limit: 5,
    windowMs: 1_000,
    burst: 5,
    precision: 1,
    mode: "reject",
    maxDelayMs: 0,
    leaseTtlMs: 0,
    ...over,
  };
}

const once = { cost: 1, dryRun: false };

async function fire(store: CounterStore, check: LimitCheck, n: number, cost = 1): Promise<CheckOutcome[]> {
  const out: CheckOutcome[] = [];
  for (let i = 0; i < n; i++) out.push((await store.check([check], { cost, dryRun: false })).outcomes[0]);
  return out;
}

const passed = (os: CheckOutcome[]) => os.filter((o) => o.allowed).length;

export function conformanceSuite(name: string, harness: () => ConformanceHarness): void {
  describe(`CounterStore conformance: ${name}`, () => {
    const setup = async (startMs?: number) => {
      const clock = manualClock(startMs);
      const store = await harness().makeStore(clock);
      return { clock, store, p: harness().prefix };
    };

    it("fixed_window: the N-th request passes, the (N+1)-th is denied until the window resets", async () => {
      const { clock, store, p } = await setup();
      const c = limitCheck(p, { algorithm: "fixed_window", limit: 5, windowMs: 1_000 });
      const os = await fire(store, c, 6);
      expect(os.map((o) => o.allowed)).toEqual([true, true, true, true, true, false]);
      expect(os[4].remaining).toBe(0);
      expect(os[5]).toMatchObject({ reason: "rate_limited", retryAfterMs: 750, resetAtMs: clock() - 250 + 1_000 });
      clock.advance(749);
      expect((await store.check([c], once)).allowed).toBe(false);
      clock.advance(1);
      expect((await store.check([c], once)).allowed).toBe(true);
    });

    it("fixed_window lets 2× the limit through around a window edge (and says so)", async () => {
      // 100 ms before the edge, not 1: the Redis key's TTL is real time, the test clock is not.
      const { clock, store, p } = await setup(Date.UTC(2026, 11, 2, 12, 0, 0, 900));
      const c = limitCheck(p, { algorithm: "fixed_window", limit: 5, windowMs: 1_000 });
      const before = passed(await fire(store, c, 10));
      clock.advance(100);
      const after = passed(await fire(store, c, 10));
      expect(before + after).toBe(10);
    });

    it("sliding_window_counter: N-th passes, (N+1)-th denied; no 2× burst at the window edge", async () => {
      const { clock, store, p } = await setup(Date.UTC(2026, 11, 2, 12, 0, 0, 999));
      const c = limitCheck(p, { algorithm: "sliding_window_counter", limit: 5, windowMs: 1_000 });
      const os = await fire(store, c, 6);
      expect(os.map((o) => o.allowed)).toEqual([true, true, true, true, true, false]);
      clock.advance(1); // next window: previous weighs 5 × (1 − 0) → nothing passes
      expect(passed(await fire(store, c, 10))).toBe(0);
      clock.advance(200); // 5 × 0.8 = 4 → one passes
      expect(passed(await fire(store, c, 10))).toBe(1);
    });

    it("sliding_window_counter with precision keeps the N-th / (N+1)-th semantics", async () => {
      const { store, p } = await setup();
      const c = limitCheck(p, { algorithm: "sliding_window_counter", limit: 10, windowMs: 1_000, precision: 4 });
      expect((await fire(store, c, 11)).map((o) => o.allowed)).toEqual([...Array(10).fill(true), false]);
    });

    it("sliding_window_log is exact: never more than the limit in any window", async () => {
      const { clock, store, p } = await setup();
      const c = limitCheck(p, { algorithm: "sliding_window_log", limit: 5, windowMs: 1_000 });
      let admittedAt: number[] = [];
      for (let t = 0; t < 3_000; t += 97) {
        for (const o of await fire(store, c, 2)) if (o.allowed) admittedAt.push(clock());
        clock.advance(97);
      }
      admittedAt = admittedAt.sort((a, b) => a - b);
      for (const t of admittedAt) expect(admittedAt.filter((u) => u > t - 1_000 && u <= t).length).toBeLessThanOrEqual(5);
      expect(admittedAt.length).toBeGreaterThanOrEqual(15);
    });

    it("token_bucket starts full with burst, refills limit per window, no 2× burst at an edge", async () => {
      const { clock, store, p } = await setup();
      const c = limitCheck(p, { algorithm: "token_bucket", limit: 10, windowMs: 1_000, burst: 4 });
      expect(passed(await fire(store, c, 10))).toBe(4);
      clock.advance(100); // one token back
      expect(passed(await fire(store, c, 10))).toBe(1);
      clock.advance(10_000); // full again, never more than burst
      expect(passed(await fire(store, c, 10))).toBe(4);
    });

    it("leaky_bucket in delay mode shapes: delayMs up to maxDelay, denied beyond, retryAfter honest", async () => {
      const { clock, store, p } = await setup();
      const c = limitCheck(p, { algorithm: "leaky_bucket", limit: 10, windowMs: 1_000, burst: 2, mode: "delay", maxDelayMs: 250 });
      const os = await fire(store, c, 6);
      expect(os.map((o) => o.delayMs)).toEqual([0, 0, 100, 200, 0, 0]);
      expect(os.map((o) => o.allowed)).toEqual([true, true, true, true, false, false]);
      expect(os[4].retryAfterMs).toBe(50);
      clock.advance(50);
      const again = (await store.check([c], once)).outcomes[0];
      expect(again).toMatchObject({ allowed: true, delayMs: 250 });
    });

    it("leaky_bucket policing (reject) is the token bucket meter", async () => {
      const { store, p } = await setup();
      const c = limitCheck(p, { algorithm: "leaky_bucket", limit: 10, windowMs: 1_000, burst: 3 });
      expect((await fire(store, c, 4)).map((o) => o.allowed)).toEqual([true, true, true, false]);
    });

    it("retryAfterMs is honest and tight for every windowed algorithm", async () => {
      for (const algorithm of ["fixed_window", "sliding_window_counter", "sliding_window_log", "token_bucket"] as const) {
        const { clock, store, p } = await setup();
        const c = limitCheck(p, { algorithm, limit: 4, windowMs: 1_000, burst: 4 });
        await fire(store, c, 2);
        clock.advance(300);
        await fire(store, c, 3);
        clock.advance(120);
        const denied = (await store.check([c], { cost: 2, dryRun: false })).outcomes[0];
        expect(denied.allowed, algorithm).toBe(false);
        expect(denied.retryAfterMs, algorithm).toBeGreaterThan(0);
        clock.advance(denied.retryAfterMs - 1);
        expect((await store.check([c], { cost: 2, dryRun: true })).allowed, `${algorithm} 1 ms early`).toBe(false);
        clock.advance(1);
        expect((await store.check([c], { cost: 2, dryRun: false })).allowed, `${algorithm} after retryAfter`).toBe(true);
      }
    });

    it("concurrency: at most limit leases; release frees one; an unreleased lease expires after its TTL", async () => {
      const { clock, store, p } = await setup();
      const c = limitCheck(p, { algorithm: "concurrency", limit: 2, windowMs: 0, leaseTtlMs: 5_000 });
      const [a, b, d] = await fire(store, c, 3);
      expect([a.allowed, b.allowed, d.allowed]).toEqual([true, true, false]);
      expect(d).toMatchObject({ reason: "concurrency_limited", retryAfterMs: 5_000 });
      expect(a.leaseId).toBeTruthy();
      expect(await store.release(a.leaseId!)).toBe(true);
      expect(await store.release(a.leaseId!)).toBe(false);
      expect(await store.release("nonsense")).toBe(false);
      expect((await store.check([c], once)).allowed).toBe(true);
      clock.advance(5_000); // b and the new one expire
      const fresh = await fire(store, c, 3);
      expect(fresh.map((o) => o.allowed)).toEqual([true, true, false]);
      expect(await store.release(b.leaseId!)).toBe(false); // expired
    });

    it("concurrency: a lease id whose units were changed frees nothing and is refused (ForgedLeaseError); the real id still frees it", async () => {
      const { store, p } = await setup();
      const c = limitCheck(p, { algorithm: "concurrency", limit: 5, windowMs: 0, leaseTtlMs: 5_000 });
      const held = await store.check([c], { cost: 2, dryRun: false });
      const id = held.outcomes[0]!.leaseId!;
      expect(id).toMatch(/^[0-9a-f]{32}\.2\./);
      for (const units of ["3000000", "1", "3"]) {
        await expect(store.release(id.replace(/^([0-9a-f]{32})\.2\./, `$1.${units}.`)), units).rejects.toBeInstanceOf(ForgedLeaseError);
      }
      expect((await store.check([c], { cost: 4, dryRun: true })).allowed).toBe(false); // still held: 2 + 4 > 5
      expect(await store.release(id)).toBe(true);
      expect((await store.check([c], { cost: 5, dryRun: true })).allowed).toBe(true);
    });

    it("quotas: calendar month in UTC, block denies until the 1st, reset at the period end", async () => {
      const { clock, store, p } = await setup(Date.UTC(2026, 11, 31, 23, 59, 59, 0));
      const q = limitCheck(p, { algorithm: "quota", kind: "quota", limit: 3, windowMs: 0, period: "month", overage: "block" });
      const os = await fire(store, q, 4);
      expect(os.map((o) => o.allowed)).toEqual([true, true, true, false]);
      expect(os[3]).toMatchObject({ reason: "quota_exhausted", resetAtMs: Date.UTC(2027, 0, 1), retryAfterMs: 1_000 });
      clock.set(Date.UTC(2027, 0, 1));
      expect((await store.check([q], once)).outcomes[0]).toMatchObject({ allowed: true, remaining: 2, resetAtMs: Date.UTC(2027, 1, 1) });
    });

    it("quotas: a UTC day; overage bill always passes and reports the units beyond the quota", async () => {
      const { clock, store, p } = await setup();
      const q = limitCheck(p, { algorithm: "quota", kind: "quota", limit: 3, windowMs: 0, period: "day", overage: "bill" });
      const os = await fire(store, q, 2, 2);
      expect(os.map((o) => [o.allowed, o.overage])).toEqual([[true, 0], [true, 1]]);
      expect(os[1].resetAtMs).toBe(Date.UTC(2026, 11, 3));
      clock.set(Date.UTC(2026, 11, 3));
      expect((await store.check([q], once)).outcomes[0]).toMatchObject({ allowed: true, overage: 0, remaining: 2 });
    });

    it("a cost above the limit (or the burst) is denied as cost_exceeds_limit, with no retry time", async () => {
      const { store, p } = await setup();
      for (const c of [
        limitCheck(p, { algorithm: "fixed_window", limit: 3 }),
        limitCheck(p, { algorithm: "sliding_window_counter", limit: 3 }),
        limitCheck(p, { algorithm: "sliding_window_log", limit: 3 }),
        limitCheck(p, { algorithm: "token_bucket", limit: 10, burst: 3 }),
        limitCheck(p, { algorithm: "leaky_bucket", limit: 10, burst: 3, mode: "delay", maxDelayMs: 60_000 }),
        limitCheck(p, { algorithm: "concurrency", limit: 3 }),
        limitCheck(p, { algorithm: "quota", kind: "quota", limit: 3, period: "month", overage: "block" }),
      ]) {
        const d = await store.check([c], { cost: 4, dryRun: false });
        expect(d.allowed, c.algorithm).toBe(false);
        expect(d.outcomes[0], c.algorithm).toMatchObject({ reason: "cost_exceeds_limit", retryAfterMs: 0, delayMs: 0 });
        expect((await store.check([c], { cost: 3, dryRun: false })).allowed, `${c.algorithm}: nothing consumed`).toBe(true);
      }
    });

    it("all-or-nothing: when one check denies, no counter consumes", async () => {
      const { store, p } = await setup();
      const open = limitCheck(p, { algorithm: "sliding_window_counter", limit: 10 });
      const tight = limitCheck(p, { algorithm: "fixed_window", limit: 1 });
      const q = limitCheck(p, { algorithm: "quota", kind: "quota", limit: 10, period: "month", overage: "block" });
      const tb = limitCheck(p, { algorithm: "token_bucket", limit: 10, burst: 10 });
      const cc = limitCheck(p, { algorithm: "concurrency", limit: 10 });
      const all = [open, tight, q, tb, cc];
      expect((await store.check(all, once)).allowed).toBe(true);
      for (let i = 0; i < 5; i++) {
        const d = await store.check(all, once);
        expect(d.allowed).toBe(false);
        expect(d.outcomes[1].allowed).toBe(false);
        expect(d.outcomes.filter((o) => o.leaseId)).toEqual([]);
      }
      const after = await store.check([open, q, tb, cc], { cost: 1, dryRun: true });
      expect(after.outcomes.map((o) => o.remaining)).toEqual([9, 9, 9, 9]);
    });

    it("all-or-nothing across a global cap and the tenant's limits, either way round", async () => {
      const { store, p } = await setup();
      const cap = globalCheck(p, { limit: 2 });
      const tenant = limitCheck(p, { algorithm: "fixed_window", limit: 1 });
      const other = limitCheck(p, { algorithm: "fixed_window", limit: 100 });
      expect((await store.check([tenant, cap], once)).allowed).toBe(true);
      // The tenant denies: the cap must not be consumed.
      expect((await store.check([tenant, cap], once)).allowed).toBe(false);
      expect((await store.check([cap], { cost: 1, dryRun: true })).outcomes[0].remaining).toBe(1);
      // The cap denies: the tenant's other counter must not be consumed.
      expect((await store.check([other, cap], once)).allowed).toBe(true);
      const d = await store.check([other, cap], once);
      expect(d.allowed).toBe(false);
      expect(d.outcomes[1].allowed).toBe(false);
      expect((await store.check([other], { cost: 1, dryRun: true })).outcomes[0].remaining).toBe(99);
    });

    it("dry run evaluates without consuming", async () => {
      const { store, p } = await setup();
      const c = limitCheck(p, { algorithm: "fixed_window", limit: 2 });
      for (let i = 0; i < 5; i++) expect((await store.check([c], { cost: 1, dryRun: true })).outcomes[0].remaining).toBe(2);
      expect(passed(await fire(store, c, 3))).toBe(2);
    });

    it("shadow mode never denies, reports shadowDenied, and counts like the limit would", async () => {
      const { store, p } = await setup();
      const c = limitCheck(p, { algorithm: "sliding_window_counter", limit: 2, mode: "shadow" });
      const os = await fire(store, c, 4);
      expect(os.every((o) => o.allowed && o.reason === "ok")).toBe(true);
      expect(os.map((o) => Boolean(o.shadowDenied))).toEqual([false, false, true, true]);
      // A shadow denial does not deny the decision it is part of.
      const strict = limitCheck(p, { algorithm: "fixed_window", limit: 5 });
      expect((await store.check([c, strict], once)).allowed).toBe(true);
    });

    it("weighted fair share: a tenant alone uses the whole cap, then others get their weight's share", async () => {
      const { clock, store, p } = await setup(Date.UTC(2026, 11, 2, 12, 0, 0, 0));
      const cap = globalCheck(p, { limit: 12, windowMs: 1_000 });
      const as = (member: string, weight: number): LimitCheck => ({ ...cap, fairShare: { member, weight } });
      expect(passed(await fire(store, as("free-a", 1), 20))).toBe(12);
      clock.advance(1_000);
      // a (weight 1) and b (weight 2) contend: b is owed 8 of 12 even if a asks first.
      expect(passed(await fire(store, as("pro-b", 2), 1))).toBe(1);
      expect(passed(await fire(store, as("free-a", 1), 20))).toBe(4);
      expect(passed(await fire(store, as("pro-b", 2), 20))).toBe(7);
    });
  });
}
