/**
 * Parity of the quota's Lua twin with the pure function for billing windows (./quota-window.ts):
 * random anchors (days 1–31), zones with and without daylight saving, day and month periods, plan
 * changes under `full` (a carried counter) and `prorate`, replanned at every step as the engine
 * does, through the memory store and the Redis store on the same test clock: every answer equal.
 */
import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { createMemoryStore } from "../store/memory";
import { createRedisStore } from "../store/redis";
import type { LimitCheck } from "../store/types";
import type { CompiledTenant } from "./compiled";
import { quotaWindow } from "./quota-window";

const HOUR = 3_600_000;
const ZONES = ["UTC", "America/Los_Angeles", "Europe/Paris", "Australia/Lord_Howe", "Asia/Kolkata"];
const OLD = "00000000000000aa";
const NEW = "00000000000000bb";

let redis: Redis;
const prefix = `${testRedisPrefix()}qw${randomBytes(3).toString("hex")}:`;
beforeAll(() => {
  redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
});
afterAll(() => redis.disconnect());

const scenario = fc.record({
  anchorDay: fc.integer({ min: 1, max: 31 }),
  zone: fc.constantFrom(...ZONES),
  period: fc.constantFrom("day" as const, "month" as const),
  limit: fc.integer({ min: 1, max: 12 }),
  overage: fc.constantFrom("block" as const, "bill" as const),
  rule: fc.constantFrom(null, "full" as const, "prorate" as const),
  // 2026, with the DST changes in March, April, October and November
  startMs: fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 11, 31) }),
  changeAfterMs: fc.integer({ min: 1, max: 20 * 24 * HOUR }),
  steps: fc.array(
    fc.record({
      dtMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: HOUR }), fc.integer({ min: HOUR, max: 9 * 24 * HOUR })),
      cost: fc.integer({ min: 1, max: 4 }),
      old: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
      dryRun: fc.integer({ min: 0, max: 6 }).map((n) => n === 0),
    }),
    { minLength: 1, maxLength: 30 },
  ),
});

describe("quota billing windows: the Lua twin answers exactly like the pure function", () => {
  it("on random anchors, zones, periods, plan changes and time jumps, replanned each step", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        let nowMs = s.startMs;
        const clock = () => nowMs;
        const memory = createMemoryStore({ clock });
        const lua = createRedisStore(redis, { testClock: clock });
        const run = randomBytes(4).toString("hex");
        const key = (id: string) => `${prefix}{t:r${run}}:q:${id}`;
        const anchor = `2026-01-${String(s.anchorDay).padStart(2, "0")}`;
        const changeAtMs = s.startMs + s.changeAfterMs;
        const tenant = (after: boolean): CompiledTenant => ({
          slug: `r${run}`, name: "r", tier: after ? "new" : "old", status: "active", overrides: [],
          billing: { anchor, timeZone: s.zone },
          ...(after && s.rule ? { planChange: { atMs: changeAtMs, fromTier: "old", rule: s.rule, quotas: [{ quotaId: OLD, operation: "*", period: s.period, limit: s.limit }] } } : {}),
        });
        for (const [n, step] of s.steps.entries()) {
          nowMs += step.dtMs;
          // Before the change the old tier's quota counts; from it (or on a step that says so) the new one.
          const after = nowMs >= changeAtMs && !step.old;
          const id = after ? NEW : OLD;
          const limit = after ? s.limit + 3 : s.limit;
          const quota = { id, operation: "*", period: s.period, limit, overage: s.overage };
          const check: LimitCheck = {
            key: key(id), kind: "quota", algorithm: "quota", limit, windowMs: 0, burst: limit, precision: 1, mode: "reject",
            maxDelayMs: 0, leaseTtlMs: 0, period: s.period, overage: s.overage, quotaWindow: quotaWindow(nowMs, quota, tenant(after)),
          };
          const options = { cost: step.cost, dryRun: step.dryRun };
          const [m, r] = [await memory.check([check], options), await lua.check([check], options)];
          expect(r.outcomes, `step ${n} at ${new Date(nowMs).toISOString()} (${s.zone}, anchor ${s.anchorDay}, ${s.period}, ${s.rule ?? "no change"})`).toEqual(m.outcomes);
        }
      }),
      { numRuns: 80 },
    );
  }, 120_000);
});
