/**
 * Quotas follow each tenant's bill on the decision path (docs/billing-periods.md, issue #26): the
 * engine plans each quota's billing periods (lib/policy/quota-window.ts) and the store picks one by
 * its own clock — here a test clock through the real Lua on Redis (and the memory store, its twin),
 * at the period edges, across daylight-saving changes, on a 31st anchor, and after a plan change.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { finalizePolicy } from "../policy/compile";
import type { CompiledPolicy } from "../policy/compiled";
import type { PolicyFileInput } from "../policy/policy-file";
import { stampChanges } from "../policy/publish-stamps";
import { createMemoryStore } from "../store/memory";
import { createRedisStore } from "../store/redis";
import type { CounterStore } from "../store/types";
import { keysUnder } from "../store/testing/redis-keys";
import { CircuitBreaker } from "./breaker";
import { DecisionEngine } from "./engine";
import { compileFixture } from "./testing/fixture";

const KEY = "sk_test_billing_0001";
let redis: Redis;
const prefix = `${testRedisPrefix()}bp${randomBytes(3).toString("hex")}:`;

beforeAll(() => {
  redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  const left = await keysUnder(redis, prefix);
  if (left.length > 0) await redis.unlink(...left);
  redis.disconnect();
});

type Billing = { anchor: string; timeZone: string } | undefined;

function policyFile(tier: string, billing: Billing, planChange?: "full" | "prorate"): PolicyFileInput {
  return {
    version: 1,
    defaults: { failureMode: "open", ...(planChange ? { planChange } : {}) },
    tiers: [
      { name: "free", quotas: [{ operation: "*", period: "month", limit: 10 }] },
      { name: "pro", quotas: [{ operation: "*", period: "month", limit: 30 }] },
      { name: "daily", quotas: [{ operation: "*", period: "day", limit: 2 }] },
    ],
    tenants: [{ slug: "acme", name: "Acme", tier, ...(billing ? { billing } : {}), keys: [{ name: "k", key: KEY }] }],
  };
}

const stores = {
  redis: (clock: () => number) => createRedisStore(redis, { testClock: clock }),
  memory: (clock: () => number) => createMemoryStore({ clock }),
} satisfies Record<string, (clock: () => number) => CounterStore>;

function setup(kind: keyof typeof stores, startMs: number, first: CompiledPolicy) {
  let nowMs = startMs;
  const clock = () => nowMs;
  let doc = first;
  const { keyIndex } = compileFixture(policyFile("free", undefined));
  const keyPrefix = `${prefix}${kind}${randomBytes(3).toString("hex")}:`;
  const engine = new DecisionEngine({
    policy: () => doc,
    keyIndex: { peek: (hash) => keyIndex[hash] ?? null, fetch: async (hash) => keyIndex[hash] ?? null },
    store: stores[kind](clock),
    localStore: createMemoryStore({ clock }),
    instances: 1,
    storeTimeoutMs: 1_000,
    breaker: new CircuitBreaker(),
    denyCache: null,
    usage: null,
    metrics: null,
    now: clock,
    keyPrefix,
  });
  const check = (cost = 1) => engine.decide({ key: KEY, operation: "GET /x", cost, explain: true });
  /** How many single-unit requests pass now, until the first denial (at most 100). */
  const drain = async () => {
    let n = 0;
    while (n < 100 && (await check()).allowed) n++;
    return n;
  };
  return { engine, check, drain, keyPrefix, set: (ms: number) => void (nowMs = ms), load: (d: CompiledPolicy) => void (doc = d) };
}

const docOf = (file: PolicyFileInput, version = 1) => compileFixture(file, version).doc;

for (const kind of ["redis", "memory"] as const) {
  describe(`billing periods on the decision path (${kind} store, test clock)`, () => {
    it("a tenant anchored on the 15th in Los Angeles gets a fresh month at 00:00 PT on the 15th, with resetSeconds to it", async () => {
      // 2026-04-15 00:00 PDT = 07:00Z.
      const edge = Date.UTC(2026, 3, 15, 7);
      const s = setup(kind, edge - 5_000, docOf(policyFile("free", { anchor: "2026-03-15", timeZone: "America/Los_Angeles" })));
      expect(await s.drain()).toBe(10);
      const denied = await s.check();
      expect(denied).toMatchObject({ allowed: false, reason: "quota_exhausted", retryAfterSeconds: 5 });
      expect(denied.checks![0]).toMatchObject({ kind: "quota", resetSeconds: 5, remaining: 0 });
      s.set(edge - 1);
      expect((await s.check()).allowed).toBe(false);
      s.set(edge);
      const fresh = await s.check();
      expect(fresh).toMatchObject({ allowed: true, remaining: 9 });
      // To 2026-05-15 00:00 PDT.
      expect(fresh.checks![0]!.resetSeconds).toBe((Date.UTC(2026, 4, 15, 7) - edge) / 1000);
      if (kind === "redis") {
        const labels = (await keysUnder(redis, s.keyPrefix)).map((k) => k.slice(k.lastIndexOf(":") + 1)).sort();
        expect(labels).toEqual(["2026-03-15@America/Los_Angeles", "2026-04-15@America/Los_Angeles"]);
      }
    });

    it("across the March daylight-saving change the period still ends at local midnight (07:00Z, not 08:00Z)", async () => {
      // The period from 2026-02-15 00:00 PST (08:00Z) to 2026-03-15 00:00 PDT (07:00Z): one hour shorter.
      const s = setup(kind, Date.UTC(2026, 1, 15, 7, 59, 59), docOf(policyFile("free", { anchor: "2026-01-15", timeZone: "America/Los_Angeles" })));
      expect(await s.drain()).toBe(10); // the January period's last second
      s.set(Date.UTC(2026, 1, 15, 8));
      expect(await s.drain()).toBe(10); // a new period at 00:00 PST
      s.set(Date.UTC(2026, 2, 15, 6, 59, 59, 999));
      const last = await s.check();
      expect(last.allowed).toBe(false);
      expect(last.checks![0]!.resetSeconds).toBe(1);
      s.set(Date.UTC(2026, 2, 15, 7));
      expect(await s.drain()).toBe(10);
    });

    it("across the November change the period ends at 00:00 PST (08:00Z, not 07:00Z)", async () => {
      // The period from 2026-10-15 00:00 PDT (07:00Z) to 2026-11-15 00:00 PST (08:00Z): one hour longer.
      const s = setup(kind, Date.UTC(2026, 9, 15, 7), docOf(policyFile("free", { anchor: "2026-03-15", timeZone: "America/Los_Angeles" })));
      expect(await s.drain()).toBe(10);
      s.set(Date.UTC(2026, 10, 15, 7, 59, 59));
      const last = await s.check();
      expect(last.allowed).toBe(false);
      expect(last.checks![0]!.resetSeconds).toBe(1);
      s.set(Date.UTC(2026, 10, 15, 8));
      expect(await s.drain()).toBe(10);
    });

    it("a 31st anchor in Paris falls on Feb 28 and runs to Mar 31 00:00 CEST, across the March change", async () => {
      const s = setup(kind, Date.UTC(2026, 1, 27, 22, 59, 59), docOf(policyFile("free", { anchor: "2026-01-31", timeZone: "Europe/Paris" })));
      expect(await s.drain()).toBe(10); // Jan 31 – Feb 28 (CET), its last second
      s.set(Date.UTC(2026, 1, 27, 23)); // Feb 28 00:00 CET
      expect(await s.drain()).toBe(10);
      s.set(Date.UTC(2026, 2, 30, 21, 59, 59)); // Mar 30 23:59:59 CEST: still the February period
      expect((await s.check()).allowed).toBe(false);
      s.set(Date.UTC(2026, 2, 30, 22)); // Mar 31 00:00 CEST
      expect(await s.drain()).toBe(10);
    });

    it("a day quota in Los Angeles resets at local midnight, 23 hours apart on the day the clocks go forward", async () => {
      const s = setup(kind, Date.UTC(2026, 2, 8, 7, 59), docOf(policyFile("daily", { anchor: "2026-01-01", timeZone: "America/Los_Angeles" })));
      expect(await s.drain()).toBe(2); // Mar 7, PST
      s.set(Date.UTC(2026, 2, 8, 8)); // Mar 8 00:00 PST
      expect(await s.drain()).toBe(2);
      const d = await s.check();
      expect(d.checks![0]!.resetSeconds).toBe(23 * 3600); // Mar 9 00:00 PDT = 07:00Z
      s.set(Date.UTC(2026, 2, 9, 7));
      expect(await s.drain()).toBe(2);
    });

    it("without billing a tenant keeps the UTC calendar month and its labels", async () => {
      const s = setup(kind, Date.UTC(2026, 11, 31, 23, 59, 59), docOf(policyFile("free", undefined)));
      expect(await s.drain()).toBe(10);
      s.set(Date.UTC(2027, 0, 1));
      expect(await s.drain()).toBe(10);
      if (kind === "redis") {
        const labels = (await keysUnder(redis, s.keyPrefix)).map((k) => k.slice(k.lastIndexOf(":") + 1)).sort();
        expect(labels).toEqual(["2026-12", "2027-01"]);
      }
    });

    for (const [rule, more] of [
      ["full", 30 - 7],
      ["prorate", Math.floor((30 * 20) / 30)],
    ] as const) {
      it(`a tier change on day 10 of a 30-day period (${rule}): usage carried, ${more} more units this period, the full quota next`, async () => {
        // Anchor the 1st in UTC: June 2026 has 30 days; the change at June 11 00:00 leaves 20 days.
        const billing = { anchor: "2026-01-01", timeZone: "UTC" };
        const v1 = docOf(policyFile("free", billing, rule));
        const s = setup(kind, Date.UTC(2026, 5, 5), v1);
        for (let i = 0; i < 7; i++) expect((await s.check()).allowed).toBe(true);
        const atMs = Date.UTC(2026, 5, 11);
        const v2body = stampChanges(docOf(policyFile("pro", billing, rule), 2), v1, atMs);
        s.load(finalizePolicy(v2body, 2, new Date(atMs)));
        s.set(atMs + 1_000);
        const first = await s.check();
        expect(first).toMatchObject({ allowed: true, tier: "pro", remaining: more - 1 });
        expect(await s.drain()).toBe(more - 1);
        s.set(Date.UTC(2026, 6, 1));
        expect(await s.drain()).toBe(30);
      });
    }
  });
}

describe("billing periods on Redis server time", () => {
  it("the store picks the period by Redis TIME: the current one before its end, the next one from it", async () => {
    const store = createRedisStore(redis);
    const [s] = await redis.time();
    const redisNow = Number(s) * 1000;
    const slot = (label: string, endMs: number) => ({ startMs: endMs - 86_400_000, endMs, label, limit: 5, carry: "" });
    const base = `${prefix}time{t:acme}:q:0123456789abcdef`;
    const quota = (current: ReturnType<typeof slot>, next: ReturnType<typeof slot>) => ({
      key: base, kind: "quota" as const, algorithm: "quota" as const, limit: 5, windowMs: 0, burst: 5, precision: 1, mode: "reject" as const,
      maxDelayMs: 0, leaseTtlMs: 0, period: "day" as const, overage: "block" as const, quotaWindow: { current, next },
    });
    // A plan made just before an edge Redis has already passed: the store counts in `next`.
    const passed = await store.check([quota(slot("before", redisNow - 1_000), slot("after", redisNow + 3_600_000))], { cost: 1, dryRun: false });
    expect(passed.outcomes[0]).toMatchObject({ allowed: true, remaining: 4, resetAtMs: redisNow + 3_600_000 });
    // A plan whose current period Redis is still in: the store counts in `current`.
    const ahead = await store.check([quota(slot("now", redisNow + 60_000), slot("later", redisNow + 3_600_000))], { cost: 2, dryRun: false });
    expect(ahead.outcomes[0]).toMatchObject({ allowed: true, remaining: 3, resetAtMs: redisNow + 60_000 });
    expect((await keysUnder(redis, `${prefix}time`)).sort()).toEqual([`${base}:after`, `${base}:now`]);
    expect(Number(await redis.get(`${base}:after`))).toBe(1);
    expect(Number(await redis.get(`${base}:now`))).toBe(2);
    expect(await redis.pttl(`${base}:now`)).toBeLessThanOrEqual(60_000);
  });
});
