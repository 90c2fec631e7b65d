/**
 * The deny cache must never change a decision: with and without it, the same requests get the
 * same decisions, reasons and (within a second) Retry-After. Two defects found from outside, then
 * the property over random policies (every algorithm, quotas, global caps with and without fair
 * share) and random request sequences from several tenants, keys and addresses.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { PolicyFileInput } from "../policy/policy-file";
import { ALGORITHMS } from "../policy/types";
import { createMemoryStore } from "../store/memory";
import type { DecisionAnswer } from "./answer";
import { CircuitBreaker } from "./breaker";
import { DenyCache } from "./deny-cache";
import { DecisionEngine, type DecisionRequest } from "./engine";
import { compileFixture } from "./testing/fixture";
import { CountingStore } from "./testing/counting-store";

const T0 = Date.UTC(2026, 11, 3, 12, 0, 0, 0);


/** Two engines on two stores and one clock: with and without the deny cache. */
function pair(file: PolicyFileInput) {
  const fixture = compileFixture(file);
  let nowMs = T0;
  const clock = () => nowMs;
  const make = (denyCache: boolean) => {
    const store = new CountingStore(createMemoryStore({ clock }));
    const engine = new DecisionEngine({
      policy: () => fixture.doc,
      keyIndex: { peek: (h) => fixture.keyIndex[h] ?? null, fetch: async (h) => fixture.keyIndex[h] ?? null },
      store,
      localStore: createMemoryStore({ clock }),
      instances: 1,
      storeTimeoutMs: 25,
      breaker: new CircuitBreaker(),
      denyCache: denyCache ? new DenyCache() : null,
      usage: null,
      metrics: null,
      now: clock,
    });
    return { engine, store };
  };
  const cached = make(true);
  const plain = make(false);
  return {
    cached,
    plain,
    advance: (ms: number) => (nowMs += ms),
    async both(request: DecisionRequest): Promise<{ cached: DecisionAnswer; plain: DecisionAnswer }> {
      return { cached: await cached.engine.decide(request), plain: await plain.engine.decide(request) };
    },
  };
}

const summary = (a: DecisionAnswer) => ({ allowed: a.allowed, status: a.status, reason: a.reason, retryAfter: a.headers["Retry-After"] });

function keyed(slug: string, n: number) {
  return `sk_test_${slug}_${String(n).padStart(8, "0")}`;
}

describe("deny cache: defects found from outside", () => {
  it("a request whose cost exceeds a cached limit is denied cost_exceeds_limit, without Retry-After", async () => {
    const p = pair({
      version: 1,
      tiers: [{ name: "t", limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 7, window: "20s" }] }],
      tenants: [{ slug: "a", name: "A", tier: "t", keys: [{ name: "k", key: keyed("a", 1) }] }],
    });
    for (let i = 0; i < 8; i++) await p.both({ key: keyed("a", 1), operation: "x" });
    const { cached, plain } = await p.both({ key: keyed("a", 1), operation: "x", cost: 8 });
    expect(plain).toMatchObject({ allowed: false, reason: "cost_exceeds_limit", retryAfterSeconds: 0 });
    expect(plain.headers["Retry-After"]).toBeUndefined();
    expect(summary(cached)).toEqual(summary(plain));
  });

  it("one tenant's denial by a weighted global cap never denies another tenant (fair share)", async () => {
    const p = pair({
      version: 1,
      tiers: [
        { name: "small", weight: 1, limits: [] },
        { name: "large", weight: 5, limits: [] },
      ],
      globalCaps: [{ operation: "*", limit: 12, window: "10s", share: "weighted" }],
      tenants: [
        { slug: "s", name: "S", tier: "small", keys: [{ name: "k", key: keyed("s", 1) }] },
        { slug: "l", name: "L", tier: "large", keys: [{ name: "k", key: keyed("l", 1) }] },
      ],
    });
    // Both active; the weight-1 tenant uses its share and is denied by the cap.
    await p.both({ key: keyed("l", 1), operation: "x" });
    let smallAdmitted = 0;
    for (let i = 0; i < 6; i++) if ((await p.both({ key: keyed("s", 1), operation: "x" })).plain.allowed) smallAdmitted++;
    expect(smallAdmitted).toBeLessThan(6);
    const admitted = { cached: 1, plain: 1 };
    for (let i = 0; i < 12; i++) {
      const r = await p.both({ key: keyed("l", 1), operation: "x" });
      expect(summary(r.cached)).toEqual(summary(r.plain));
      if (r.cached.allowed) admitted.cached++;
      if (r.plain.allowed) admitted.plain++;
    }
    expect(admitted.plain).toBe(10);
    expect(admitted.cached).toBe(admitted.plain);
  });

  it("still answers a repeated denial without a store call (that is what it is for)", async () => {
    const p = pair({
      version: 1,
      tiers: [
        {
          name: "t",
          limits: [
            { operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 3, window: "10s" },
            { operation: "*", scope: "tenant", algorithm: "fixed_window", limit: 1000, window: "1m" },
          ],
          quotas: [{ operation: "*", period: "month", limit: 100_000 }],
        },
      ],
      tenants: [{ slug: "a", name: "A", tier: "t", keys: [{ name: "k", key: keyed("a", 1) }] }],
    });
    for (let i = 0; i < 4; i++) await p.both({ key: keyed("a", 1), operation: "x" });
    const calls = p.cached.store.calls;
    for (let i = 0; i < 50; i++) {
      const r = await p.both({ key: keyed("a", 1), operation: "x" });
      expect(summary(r.cached)).toEqual(summary(r.plain));
    }
    expect(p.cached.store.calls).toBe(calls);
  });
});

// ---- the property ----

const limitArb = fc
  .record({
    scope: fc.constantFrom("api_key", "tenant", "ip", "global"),
    algorithm: fc.constantFrom(...ALGORITHMS),
    limit: fc.integer({ min: 1, max: 6 }),
    windowS: fc.integer({ min: 1, max: 8 }),
    burst: fc.integer({ min: 1, max: 6 }),
    precision: fc.integer({ min: 1, max: 4 }),
    mode: fc.constantFrom("reject", "reject", "reject", "shadow", "delay"),
    operation: fc.constantFrom("*", "read", "write"),
  })
  .map((l) => {
    const bucket = l.algorithm === "token_bucket" || l.algorithm === "leaky_bucket";
    const mode = l.mode === "delay" && !bucket ? "reject" : l.mode;
    return {
      operation: l.operation,
      scope: l.scope,
      algorithm: l.algorithm,
      limit: l.limit,
      ...(l.algorithm === "concurrency" ? { leaseTtl: `${l.windowS}s` } : { window: `${l.windowS}s` }),
      ...(bucket ? { burst: l.burst } : {}),
      ...(l.algorithm === "sliding_window_counter" ? { precision: l.precision } : {}),
      mode,
      ...(mode === "delay" ? { maxDelay: "500ms" } : {}),
    };
  });

const policyArb = fc
  .record({
    tiers: fc.array(
      fc.record({
        weight: fc.integer({ min: 1, max: 5 }),
        limits: fc.uniqueArray(limitArb, { maxLength: 3, selector: (l) => `${l.operation}|${l.scope}|${l.algorithm}` }),
        quota: fc.option(fc.record({ limit: fc.integer({ min: 1, max: 12 }), overage: fc.constantFrom("block", "bill"), operation: fc.constantFrom("*", "write") }), { nil: undefined }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
    caps: fc.uniqueArray(
      fc.record({ operation: fc.constantFrom("*", "read", "write"), limit: fc.integer({ min: 2, max: 14 }), windowS: fc.integer({ min: 1, max: 8 }), share: fc.constantFrom("none", "weighted") }),
      { maxLength: 2, selector: (c) => `${c.operation}|${c.windowS}` },
    ),
  })
  .map(({ tiers, caps }): PolicyFileInput => ({
    version: 1,
    operations: [
      { name: "read", match: ["GET /r"] },
      { name: "write", match: ["POST /w"], cost: 2 },
    ],
    tiers: tiers.map((t, i) => ({
      name: `t${i}`,
      weight: t.weight,
      limits: t.limits,
      quotas: t.quota ? [{ operation: t.quota.operation, period: "day", limit: t.quota.limit, overage: t.quota.overage }] : [],
    })),
    globalCaps: caps.map((c) => ({ operation: c.operation, limit: c.limit, window: `${c.windowS}s`, share: c.share })),
    tenants: [0, 1, 2].map((n) => ({
      slug: `ten${n}`,
      name: `Tenant ${n}`,
      tier: `t${n % tiers.length}`,
      keys: [{ name: "a", key: keyed(`ten${n}`, 1) }, { name: "b", key: keyed(`ten${n}`, 2) }],
    })),
  }));

const requestArb = fc.record({
  dtMs: fc.oneof({ weight: 5, arbitrary: fc.constant(0) }, { weight: 4, arbitrary: fc.integer({ min: 1, max: 400 }) }, { weight: 1, arbitrary: fc.integer({ min: 400, max: 9_000 }) }),
  tenant: fc.integer({ min: 0, max: 2 }),
  key: fc.integer({ min: 1, max: 2 }),
  operation: fc.constantFrom("GET /r", "POST /w", "DELETE /other"),
  ip: fc.constantFrom("203.0.113.1", "203.0.113.2", undefined),
  cost: fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 2, arbitrary: fc.integer({ min: 1, max: 8 }) }),
  dryRun: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
});

describe("deny cache: the property", () => {
  it("random requests over every algorithm, quotas and global caps: same decisions, reasons, Retry-After within 1 s", async () => {
    // Store calls the cache saved over all runs: the property must exercise it, not only agree.
    let saved = 0;
    await fc.assert(
      fc.asyncProperty(policyArb, fc.array(requestArb, { minLength: 40, maxLength: 120, size: "max" }), async (file, requests) => {
        const p = pair(file);
        for (const [n, r] of requests.entries()) {
          p.advance(r.dtMs);
          const request: DecisionRequest = { key: keyed(`ten${r.tenant}`, r.key), operation: r.operation };
          if (r.ip) request.ip = r.ip;
          if (r.cost) request.cost = r.cost;
          if (r.dryRun) request.dryRun = true;
          const { cached, plain } = await p.both(request);
          const where = `request ${n}: ${JSON.stringify(request)}`;
          expect({ allowed: cached.allowed, status: cached.status, reason: cached.reason }, where).toEqual({ allowed: plain.allowed, status: plain.status, reason: plain.reason });
          expect(Math.abs(cached.retryAfterSeconds - plain.retryAfterSeconds), where).toBeLessThanOrEqual(1);
          expect(cached.headers["Retry-After"] === undefined, where).toBe(plain.headers["Retry-After"] === undefined);
        }
        saved += p.plain.store.calls - p.cached.store.calls;

      }),
      { numRuns: Number(process.env.DENY_CACHE_RUNS ?? 200) },
    );
    expect(saved).toBeGreaterThan(500);
  }, 120_000);
});
