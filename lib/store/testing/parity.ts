/**
 * Parity of the Lua twins with the pure algorithms: the same scenario (a limit, a start time, a
 * sequence of steps: time moves, costs, subjects, dry runs, two-subject decisions, releases,
 * reservations and their settles — SETTLE against refundState, lib/policy/algorithms/refund.ts) is
 * replayed through the memory store (the pure functions) and the Redis store (the Lua script, its
 * clock overridden to the scenario's), and every answer must be identical.
 * Used by lib/policy/algorithms/*.int.test.ts, one file per algorithm next to its pure twin.
 */
import { randomBytes } from "node:crypto";
import fc from "fast-check";
import type { Redis } from "ioredis";
import { expect } from "vitest";
import type { Algorithm } from "../../policy/types";
import { createMemoryStore } from "../memory";
import { createRedisStore } from "../redis";
import type { CheckOutcome, LimitCheck } from "../types";

export type ParityAlgorithm = Algorithm | "quota" | "fair_share";

export interface Step {
  dtMs: number;
  cost: number;
  subject: number;
  dryRun: boolean;
  /** Concurrency: release the oldest unreleased lease instead of checking. */
  release: boolean;
  /** Check this subject and the next one in one decision (all-or-nothing). */
  pair: boolean;
  /** Decide with `reserve` (a committed decision can then be settled). */
  reserve?: boolean;
  /**
   * Instead of checking: settle the newest unsettled reservation with this actual cost, or (again)
   * settle the oldest settled one once more (a replay, or a conflict when the cost differs).
   */
  settle?: { actual: number; again: boolean } | null;
}

export interface Scenario {
  check: Omit<LimitCheck, "key">;
  /** Fair share: each subject's weight. */
  weights: number[];
  startMs: number;
  steps: Step[];
}

const DAY = 86_400_000;
const YEAR_2026 = Date.UTC(2026, 0, 1);

function configArbitrary(algorithm: ParityAlgorithm): fc.Arbitrary<Omit<LimitCheck, "key">> {
  const bucket = algorithm === "token_bucket" || algorithm === "leaky_bucket";
  return fc
    .record({
      limit: fc.integer({ min: 1, max: 20 }),
      windowMs: fc.constantFrom(7, 100, 1_000, 60_000, 86_400_000),
      burst: fc.integer({ min: 1, max: 20 }),
      precision: algorithm === "sliding_window_counter" ? fc.integer({ min: 1, max: 6 }) : fc.constant(1),
      mode: bucket ? fc.constantFrom("reject", "shadow", "delay") : fc.constantFrom("reject", "reject", "shadow"),
      maxDelayMs: fc.integer({ min: 0, max: 3_000 }),
      leaseTtlMs: fc.integer({ min: 1, max: 5_000 }),
      period: fc.constantFrom("day", "month"),
      overage: fc.constantFrom("block", "bill"),
    })
    .map((c) => ({
      ...c,
      kind: algorithm === "quota" ? "quota" : algorithm === "fair_share" ? "global" : "limit",
      algorithm: algorithm === "fair_share" ? "fixed_window" : algorithm,
      maxDelayMs: c.mode === "delay" ? c.maxDelayMs : 0,
    }) as Omit<LimitCheck, "key">);
}

const stepArbitrary = (maxCost: number) =>
  fc.record({
    dtMs: fc.oneof(
      { weight: 4, arbitrary: fc.constant(0) },
      { weight: 4, arbitrary: fc.integer({ min: 1, max: 20 }) },
      { weight: 3, arbitrary: fc.integer({ min: 0, max: 2_000 }) },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: 3 * DAY }) },
    ),
    cost: fc.oneof({ weight: 5, arbitrary: fc.constant(1) }, { weight: 2, arbitrary: fc.integer({ min: 1, max: maxCost }) }),
    subject: fc.integer({ min: 0, max: 2 }),
    dryRun: fc.boolean().map((b) => b && Math.random() < 0.2),
    release: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
    pair: fc.integer({ min: 0, max: 6 }).map((n) => n === 0),
    reserve: fc.boolean(),
    settle: fc.option(fc.record({ actual: fc.integer({ min: 0, max: maxCost + 1 }), again: fc.integer({ min: 0, max: 3 }).map((n) => n === 0) }), { freq: 3 }),
  });

export function scenarioArbitrary(algorithm: ParityAlgorithm): fc.Arbitrary<Scenario> {
  return configArbitrary(algorithm).chain((check) =>
    fc.record({
      check: fc.constant(check),
      weights: fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 3, maxLength: 3 }),
      startMs: fc.oneof(
        fc.integer({ min: YEAR_2026, max: YEAR_2026 + 365 * DAY }),
        // the last seconds of a month or a day
        fc.integer({ min: 0, max: 11 }).chain((m) => fc.integer({ min: -5_000, max: 0 }).map((d) => Date.UTC(2026, m + 1, 1) + d)),
      ),
      steps: fc.array(stepArbitrary(check.limit + 2), { minLength: 1, maxLength: 40 }),
    }),
  );
}

/** Hand-picked scenarios: a burst past the limit, a window edge, a long idle, a time jump. */
export function fixedScenarios(algorithm: ParityAlgorithm): Scenario[] {
  const check = (over: Partial<LimitCheck>): Omit<LimitCheck, "key"> => ({
    kind: algorithm === "quota" ? "quota" : algorithm === "fair_share" ? "global" : "limit",
    algorithm: algorithm === "fair_share" ? "fixed_window" : algorithm,
    limit: 5, windowMs: 1_000, burst: 5, precision: 1, mode: "reject", maxDelayMs: 0, leaseTtlMs: 1_500,
    period: "month", overage: "block", ...over,
  });
  const s = (dtMs: number, cost = 1, subject = 0, extra: Partial<Step> = {}): Step =>
    ({ dtMs, cost, subject, dryRun: false, release: false, pair: false, ...extra });
  const burst = [s(0), s(0), s(0), s(0), s(0), s(0), s(0, 2), s(0, 7)];
  // Reserve 3 and settle at 1, reserve 3 on two counters and settle at 0, replay, conflict, a cost
  // above the reservation: each refund must show in the next answers of both stores.
  const settle = (actual: number, again = false) => s(0, 1, 0, { settle: { actual, again } });
  const reserveSettle = [
    s(0, 3, 0, { reserve: true }), settle(1), s(0), s(0), s(0, 3, 0, { reserve: true, pair: true }), settle(0), s(0, 2),
    settle(1, true), settle(2, true), s(0, 4, 1, { reserve: true }), settle(9), s(0, 2, 1), s(3, 5), s(0, 2, 0, { reserve: true }), s(500), settle(0),
  ];
  return [
    { check: check({}), weights: [1, 2, 3], startMs: Date.UTC(2026, 11, 2, 12, 0, 0, 250), steps: burst },
    {
      check: check({ precision: 3, burst: 3, mode: "delay", maxDelayMs: 400 }),
      weights: [1, 1, 4],
      startMs: Date.UTC(2026, 11, 31, 23, 59, 59, 990),
      steps: [...burst, s(9), ...burst, s(1), s(333, 1, 1), s(0, 1, 2, { pair: true }), s(0, 1, 0, { release: true }), s(2_000, 3)],
    },
    {
      check: check({ limit: 3, windowMs: 7, burst: 2 }),
      weights: [5, 1, 1],
      startMs: Date.UTC(2026, 5, 30, 23, 59, 59, 999),
      steps: [s(0), s(1), s(1), s(1), s(5), s(0, 1, 0, { dryRun: true }), s(40 * DAY), s(0), s(0), s(0), s(0)],
    },
    { check: check({}), weights: [1, 2, 3], startMs: Date.UTC(2026, 11, 2, 12, 0, 0, 250), steps: reserveSettle },
    { check: check({ limit: 6, burst: 6, windowMs: 60_000, precision: 2, mode: "delay", maxDelayMs: 20_000 }), weights: [2, 1, 1], startMs: Date.UTC(2026, 11, 2, 12, 0, 30), steps: reserveSettle },
  ];
}

const normalise = (os: CheckOutcome[]) => os.map((o) => ({ ...o, leaseId: o.leaseId ? "lease" : undefined }));

/**
 * Scenarios for the run on Redis server time: real time passes between steps (the test sleeps
 * dtMs), so windows are tens of ms and a scenario lasts well under a second.
 */
export function realTimeScenarioArbitrary(algorithm: ParityAlgorithm): fc.Arbitrary<Scenario> {
  return fc
    .tuple(scenarioArbitrary(algorithm), fc.constantFrom(7, 20, 50, 200), fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 10, max: 40 })), { minLength: 20, maxLength: 20 }))
    .map(([scenario, windowMs, dts]) => ({
      ...scenario,
      // Leases outlive the scenario: a release then races no expiry between the two stores' clocks.
      check: { ...scenario.check, windowMs, maxDelayMs: Math.min(scenario.check.maxDelayMs, windowMs), leaseTtlMs: 60_000 },
      steps: scenario.steps.slice(0, 20).map((step, i) => ({ ...step, dtMs: dts[i]! })),
    }));
}

export interface ParityOptions {
  /**
   * `scenario` (default): the Redis store runs on the scenario's clock (the `now` override, so its
   * keys live a minute past their windows: `ttlPad`). `redis`: the Redis store runs exactly as in
   * production, on Redis TIME with exact expiries (`ttlPad = 0`), the steps' dtMs are slept for
   * real, and the memory store is given the time each Redis call reported, so an expiry set too
   * short (or a field dropped too early) in the production branch shows up as a different answer.
   */
  clock?: "scenario" | "redis";
}

/** Replays one scenario through both stores and expects identical answers at every step. */
export async function expectParity(redis: Redis, prefix: string, scenario: Scenario, options: ParityOptions = {}): Promise<void> {
  const onRedisTime = options.clock === "redis";
  let nowMs = scenario.startMs;
  const clock = () => nowMs;
  const memory = createMemoryStore({ clock });
  const lua = onRedisTime ? createRedisStore(redis) : createRedisStore(redis, { testClock: clock });
  const redisNowMs = async () => {
    const [s, us] = await redis.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };
  const run = randomBytes(4).toString("hex");
  const fair = scenario.check.kind === "global";
  // A fair-share cap is one key for every subject; a pair then checks a second cap (one decision
  // never checks the same counter twice).
  const checkFor = (subject: number, cap = 1): LimitCheck =>
    fair
      ? { ...scenario.check, key: `${prefix}{g:cap${cap}${run}}:g`, fairShare: { member: `m${subject}`, weight: scenario.weights[subject] } }
      : { ...scenario.check, key: `${prefix}{t:p${run}}:c:l1:s${subject}` };
  const leases: { memory: string; redis: string }[] = [];
  const reservations: { memory: string; redis: string }[] = [];
  const settled: { memory: string; redis: string }[] = [];

  if (onRedisTime) nowMs = await redisNowMs();
  const startMs = nowMs;
  for (const [n, step] of scenario.steps.entries()) {
    if (onRedisTime) {
      if (step.dtMs > 0) await new Promise((r) => setTimeout(r, step.dtMs));
    } else nowMs += step.dtMs;
    const where = `step ${n} at +${nowMs - startMs} ms`;
    if (step.release && scenario.check.algorithm === "concurrency" && leases.length > 0) {
      const lease = leases.shift()!;
      if (onRedisTime) nowMs = await redisNowMs();
      expect(await lua.release(lease.redis), where).toBe(await memory.release(lease.memory));
      continue;
    }
    if (step.settle && (step.settle.again ? settled : reservations).length > 0) {
      const ids = step.settle.again ? settled[0]! : reservations.pop()!;
      if (!step.settle.again) settled.push(ids);
      if (onRedisTime) nowMs = await redisNowMs();
      expect(await lua.settle(ids.redis, step.settle.actual), `${where}: settle`).toEqual(await memory.settle(ids.memory, step.settle.actual));
      continue;
    }
    const checks = step.pair ? [checkFor(step.subject), checkFor((step.subject + 1) % 3, 2)] : [checkFor(step.subject)];
    const options = { cost: step.cost, dryRun: step.dryRun, reserve: step.reserve === true };
    // On Redis time, Redis decides first and the memory store then decides at the instant it reported.
    const r = await lua.check(checks, options);
    if (onRedisTime) nowMs = r.nowMs;
    const m = await memory.check(checks, options);
    expect({ allowed: r.allowed, nowMs: r.nowMs, outcomes: normalise(r.outcomes) }, where).toEqual({
      allowed: m.allowed,
      nowMs: m.nowMs,
      outcomes: normalise(m.outcomes),
    });
    m.outcomes.forEach((o, i) => {
      if (o.leaseId && r.outcomes[i].leaseId) leases.push({ memory: o.leaseId, redis: r.outcomes[i].leaseId! });
    });
    expect(r.reservationId !== undefined, `${where}: a reservation in both stores or neither`).toBe(m.reservationId !== undefined);
    if (r.reservationId && m.reservationId) reservations.push({ memory: m.reservationId, redis: r.reservationId });
  }
}
