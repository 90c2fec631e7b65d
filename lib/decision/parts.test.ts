import type { LimitCheck } from "../store/types";
import { describe, expect, it } from "vitest";
import { LruCache } from "../redis/key-index";
import { UsageRecorder } from "../redis/usage";
import { LATENCY_BUCKETS_MS, latencyBucketIndex, parseUsageHash, usageFields } from "../redis/usage-format";
import type { StoreDecision } from "../store/types";
import { answerFromStore } from "./answer";
import { CircuitBreaker } from "./breaker";
import type { PlannedCheck } from "./checks";
import { DenyCache } from "./deny-cache";
import { parseCheckBody, parseReleaseBody } from "./request";

describe("circuit breaker", () => {
  it("stays closed below 20 calls even if all fail, opens at ≥ 50% of ≥ 20, probes after 5 s", () => {
    const b = new CircuitBreaker();
    for (let i = 0; i < 19; i++) b.failure(1_000);
    expect(b.state).toBe("closed");
    b.failure(1_000);
    expect(b.state).toBe("open");
    expect(b.allow(5_999)).toBe(false);
    expect(b.allow(6_000)).toBe(true); // the probe
    expect(b.state).toBe("half_open");
    expect(b.allow(6_001)).toBe(false); // one probe at a time
    b.failure(6_010);
    expect(b.state).toBe("open");
    expect(b.allow(11_010)).toBe(true);
    b.success(11_011);
    expect(b.state).toBe("closed");
  });

  it("does not open at 45% failures", () => {
    const b = new CircuitBreaker();
    for (let i = 0; i < 100; i++) {
      if (i % 20 < 9) b.failure(1_000);
      else b.success(1_000);
    }
    expect(b.state).toBe("closed");
  });

  it("probes at once when the store's connection is back (probeNow), and a failed probe opens it again", () => {
    const b = new CircuitBreaker();
    for (let i = 0; i < 20; i++) b.failure(1_000);
    expect(b.allow(1_100)).toBe(false);
    b.probeNow();
    expect(b.allow(1_100)).toBe(true);
    expect(b.allow(1_100)).toBe(false); // still one probe at a time
    b.failure(1_120);
    expect(b.allow(1_200)).toBe(false);
    b.probeNow();
    expect(b.allow(1_300)).toBe(true);
    b.success(1_310);
    expect(b.state).toBe("closed");
    b.probeNow(); // closed: nothing to do
    expect(b.state).toBe("closed");
  });

  it("forgets failures older than its window", () => {
    const b = new CircuitBreaker();
    for (let i = 0; i < 15; i++) b.failure(1_000);
    for (let i = 0; i < 15; i++) b.failure(20_000);
    expect(b.state).toBe("closed");
  });
});

describe("deny cache", () => {
  const check = (key: string): LimitCheck => ({ key, kind: "limit", algorithm: "fixed_window", limit: 5, windowMs: 60_000, burst: 5, precision: 1, mode: "reject", maxDelayMs: 0, leaseTtlMs: 0 });
  const denial = (retryAfterMs: number) => ({ allowed: false, reason: "rate_limited" as const, limit: 5, remaining: 0, resetAtMs: 0, retryAfterMs, delayMs: 0 });
  const pass = (remaining: number) => ({ allowed: true, reason: "ok" as const, limit: 5, remaining, resetAtMs: 0, retryAfterMs: 0, delayMs: 0 });
  it("denies the same cost until T, not after; other costs go to the store", () => {
    const c = new DenyCache();
    c.observe([check("k")], { nowMs: 0, allowed: false, outcomes: [denial(1_000)] }, 2, 9_000, c.epoch);
    expect(c.decide([check("k")], 2, 9_999)?.outcomes[0]).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(c.decide([check("k")], 3, 9_999)).toBeNull();
    expect(c.decide([check("k")], 1, 9_999)).toBeNull();
    expect(c.decide([check("k")], 2, 10_000)).toBeNull();
  });
  it("answers a request with other counters only when each is known to have room for it", () => {
    const c = new DenyCache();
    c.observe([check("a"), check("b")], { nowMs: 0, allowed: false, outcomes: [denial(1_000), pass(1)] }, 1, 0, c.epoch);
    expect(c.decide([check("a"), check("b")], 1, 10)).not.toBeNull();
    expect(c.decide([check("a"), check("unseen")], 1, 10)).toBeNull();
    // b was then consumed to 0 by another request: a request on a and b may now be denied by b too.
    c.observe([check("b")], { nowMs: 0, allowed: true, outcomes: [pass(0)] }, 1, 20, c.epoch);
    expect(c.decide([check("a"), check("b")], 1, 30)).toBeNull();
  });
  it("does not learn the answer to a call sent before a clear (a rollout step or a new version)", () => {
    const c = new DenyCache();
    const sentIn = c.epoch;
    // v1's denial (5 of 5) was in flight when the step moved the tenant to v2 (7): the clear came first.
    c.clear();
    c.observe([check("k")], { nowMs: 0, allowed: false, outcomes: [denial(60_000)] }, 1, 0, sentIn);
    expect(c.decide([check("k")], 1, 10)).toBeNull();
    c.observe([check("k")], { nowMs: 0, allowed: false, outcomes: [denial(60_000)] }, 1, 0, c.epoch);
    expect(c.decide([check("k")], 1, 10)).not.toBeNull();
  });
  it("is bounded", () => {
    const c = new DenyCache(10);
    for (let i = 0; i < 100; i++) c.observe([check(`k${i}`)], { nowMs: 0, allowed: false, outcomes: [denial(1e12)] }, 1, 0, c.epoch);
    expect(c.size).toBe(10);
  });
});

describe("request parsing", () => {
  it("accepts the documented example and batch bodies", () => {
    const one = parseCheckBody({ key: "sk_test_acme_ci_0001", operation: "GET /v1/orders/42", ip: "203.0.113.7", cost: 1 });
    expect(one).toMatchObject({ ok: true, batch: false });
    expect(parseCheckBody({ requests: [{ tenant: "acme", operation: "export" }] })).toMatchObject({ ok: true, batch: true });
  });
  it("names the field in every error", () => {
    const field = (body: unknown) => {
      const r = parseCheckBody(body);
      return r.ok ? null : r.error.field;
    };
    expect(field({ key: "k", operation: "x", cost: 0 })).toBe("cost");
    expect(field({ key: "k", operation: 5 })).toBe("operation");
    expect(field({ operation: "x" })).toBe("key");
    expect(field({ key: "k", tenant: "t", operation: "x" })).toBe("tenant");
    expect(field({ key: "k", operation: "x", ip: "1.2.3" })).toBe("ip");
    expect(field({ key: "k", operation: "x", explain: 1 })).toBe("explain");
    expect(field({ requests: {} })).toBe("requests");
    expect(field({ requests: [{ key: "k", operation: "x" }, 3] })).toBe("requests[1]");
    expect(field({ key: "x".repeat(513), operation: "x" })).toBe("key");
    const r = parseCheckBody({ key: "k", operation: "x", cost: 0 });
    expect(r.ok ? "" : r.error.message).toBe("cost: expected an integer ≥ 1");
    const missing = parseCheckBody({ key: "k" });
    expect(missing.ok ? "" : missing.error.message).toBe("operation: is required");
  });
  it("release needs a leaseId", () => {
    expect(parseReleaseBody({ leaseId: "abc" })).toEqual({ ok: true, leaseId: "abc" });
    expect(parseReleaseBody({})).toMatchObject({ ok: false, error: { field: "leaseId" } });
  });
});

describe("answer headers", () => {
  const planned = (name: string, windowSeconds: number, mode: "reject" | "shadow" = "reject"): PlannedCheck =>
    ({ name, scope: "api_key", windowSeconds, check: { key: name, kind: "limit", algorithm: "fixed_window", limit: 0, windowMs: 0, burst: 0, precision: 1, mode, maxDelayMs: 0, leaseTtlMs: 0 } });
  const ctx = { tenant: "acme", tier: "free", operation: "orders-read", policyVersion: 7 };

  it("a denial names the limit that frees last; Retry-After, RateLimit-Reset and t agree (rounded up)", () => {
    const decision: StoreDecision = {
      nowMs: 1_000,
      allowed: false,
      outcomes: [
        { allowed: false, reason: "rate_limited", limit: 100, remaining: 0, resetAtMs: 61_000, retryAfterMs: 16_001, delayMs: 0 },
        { allowed: false, reason: "rate_limited", limit: 10, remaining: 0, resetAtMs: 5_000, retryAfterMs: 3_000, delayMs: 0 },
      ],
    };
    const a = answerFromStore(ctx, decision, [planned("free-api_key", 60), planned("free-tenant", 10)], { explain: false, dryRun: false });
    expect(a).toMatchObject({ status: 429, reason: "rate_limited", limit: 100, remaining: 0, resetSeconds: 17, retryAfterSeconds: 17 });
    expect(a.headers).toEqual({
      "RateLimit-Limit": "100",
      "RateLimit-Remaining": "0",
      "RateLimit-Reset": "17",
      "Retry-After": "17",
      "RateLimit-Policy": '"free-api_key";q=100;w=60',
      RateLimit: '"free-api_key";r=0;t=17',
    });
  });

  it("when allowed, the most restrictive limit is the one with the fewest remaining; shadow limits are reported, not enforced", () => {
    const decision: StoreDecision = {
      nowMs: 0,
      allowed: true,
      outcomes: [
        { allowed: true, reason: "ok", limit: 100, remaining: 50, resetAtMs: 30_000, retryAfterMs: 0, delayMs: 0 },
        { allowed: true, reason: "ok", limit: 10, remaining: 2, resetAtMs: 4_500, retryAfterMs: 0, delayMs: 120 },
        { allowed: false, reason: "rate_limited", limit: 1, remaining: 0, resetAtMs: 9_000, retryAfterMs: 9_000, delayMs: 0, shadowDenied: true },
      ],
    };
    const a = answerFromStore(ctx, decision, [planned("a", 60), planned("b", 10), planned("s", 60, "shadow")], { explain: true, dryRun: false });
    expect(a).toMatchObject({ allowed: true, status: 200, reason: "ok", limit: 10, remaining: 2, resetSeconds: 5, delayMs: 120, shadowDenied: true });
    expect(a.headers.RateLimit).toBe('"b";r=2;t=5');
    expect(a.headers["Retry-After"]).toBeUndefined();
    expect(a.checks).toHaveLength(3);
  });
});

describe("usage format", () => {
  it("round-trips through the documented hash fields", () => {
    const r = new UsageRecorder(null);
    r.record({ atMs: 120_500, tenant: "acme", tier: "free", operation: "orders-read", outcome: "allowed", keyPrefix: "abcdef012345", latencyMs: 0.7 });
    r.record({ atMs: 120_900, tenant: "acme", tier: "free", operation: "orders-read", outcome: "denied", keyPrefix: "abcdef012345", latencyMs: 3 });
    r.record({ atMs: 121_000, tenant: null, tier: null, operation: null, outcome: "denied", keyPrefix: null, latencyMs: 5_000 });
    r.recordError(121_000, "redis_timeout");
    const minute = r.snapshot().get(120_000)!;
    const hash = Object.fromEntries([...minute].map(([k, v]) => [k, String(v)]));
    expect(hash[usageFields.decision("acme", "free", "orders-read", "allowed")]).toBe("1");
    expect(hash["k|acme|abcdef012345|denied"]).toBe("1");
    expect(hash["d|_|_|*|denied"]).toBe("1");
    const parsed = parseUsageHash(120_000, { ...hash, "junk|x": "3", "d|a|b|c|weird": "1" });
    expect(parsed.decisions).toHaveLength(3);
    expect(parsed.keys).toHaveLength(3);
    expect(parsed.latency.allowed[latencyBucketIndex(0.7)]).toBe(1);
    expect(parsed.latency.denied[LATENCY_BUCKETS_MS.length]).toBe(1);
    expect(parsed.errors.redis_timeout).toBe(1);
  });
});

describe("LRU cache", () => {
  it("evicts the least recently used past its bound and expires entries", () => {
    const c = new LruCache<string>(2);
    c.set("a", "1", 100);
    c.set("b", "2", 100);
    expect(c.get("a", 0)).toBe("1");
    c.set("c", "3", 100);
    expect(c.get("b", 0)).toBeUndefined();
    expect(c.get("a", 0)).toBe("1");
    expect(c.get("a", 100)).toBeUndefined();
  });

  it("keeps a key that is looked up often, however many others pass through", () => {
    const c = new LruCache<string>(100);
    c.set("hot", "h", 1_000);
    for (let i = 0; i < 10_000; i++) {
      c.set(`k${i}`, "x", 1_000);
      expect(c.get("hot", 0), `after ${i} inserts`).toBe("h");
    }
    expect(c.size).toBe(100);
    expect(c.get("k0", 0)).toBeUndefined(); // the cold ones went
  });
});
