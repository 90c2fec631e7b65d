import { describe, expect, it } from "vitest";
import { UsageRecorder } from "../redis/usage";
import { keys } from "../redis/keys";
import { createMemoryStore } from "../store/memory";
import type { CheckOutcome, LimitCheck, StoreDecision } from "../store/types";
import type { PolicyFileInput } from "../policy/policy-file";
import { CircuitBreaker } from "./breaker";
import type { PlannedCheck } from "./checks";
import { DenyCache } from "./deny-cache";
import { DecisionEngine } from "./engine";
import { compileFixture } from "./testing/fixture";
import { denialOf, quotaIdOf } from "./decide";
import { CountingStore } from "./testing/counting-store";

function planned(kind: LimitCheck["kind"], key: string): PlannedCheck {
  return {
    check: {
      key,
      kind,
      algorithm: kind === "quota" ? "quota" : "fixed_window",
      limit: 5,
      windowMs: kind === "quota" ? 0 : 60_000,
      burst: 5,
      precision: 1,
      mode: "reject",
      maxDelayMs: 0,
      leaseTtlMs: 0,
    },
    name: kind,
    scope: "tenant",
    windowSeconds: 60,
  };
}

function outcome(allowed: boolean, retryAfterMs: number, reason: CheckOutcome["reason"] = allowed ? "ok" : "rate_limited"): CheckOutcome {
  return { allowed, reason, limit: 5, remaining: allowed ? 1 : 0, resetAtMs: 1_000 + retryAfterMs, retryAfterMs, delayMs: 0 };
}

const rate = planned("limit", keys.counter("acme", "lim1", "_", "sl:"));
const quota = planned("quota", keys.quota("acme", "0123456789abcdef", "sl:"));

describe("quotaIdOf", () => {
  it("reads the quota id back from a quota check's counter key, and nothing from other checks", () => {
    expect(quotaIdOf(quota)).toBe("0123456789abcdef");
    expect(quotaIdOf(planned("quota", keys.quota("acme", "0123456789abcdef", "tenant-prefix:{x}:q:")))).toBe("0123456789abcdef");
    expect(quotaIdOf(rate)).toBeNull();
    expect(quotaIdOf(planned("global", keys.globalCap("cap1", "sl:")))).toBeNull();
  });
});

describe("denialOf: the quota that denied", () => {
  const deniedQuotaOf = (decision: StoreDecision, checks: PlannedCheck[]) => denialOf(decision, checks)?.quota ?? null;
  const at = (allowed: boolean, outcomes: CheckOutcome[]): StoreDecision => ({ nowMs: 1_000, allowed, outcomes });

  it("is null when the decision passed", () => {
    expect(deniedQuotaOf(at(true, [outcome(true, 0), outcome(true, 0)]), [rate, quota])).toBeNull();
  });

  it("is null when only a rate limit denied", () => {
    expect(deniedQuotaOf(at(false, [outcome(false, 5_000), outcome(true, 0)]), [rate, quota])).toBeNull();
  });

  it("names the quota when the quota denied", () => {
    expect(deniedQuotaOf(at(false, [outcome(true, 0), outcome(false, 86_400_000, "quota_exhausted")]), [rate, quota])).toBe("0123456789abcdef");
  });

  it("attributes a request both refuse to the check the answer names (the one that frees last)", () => {
    expect(deniedQuotaOf(at(false, [outcome(false, 5_000), outcome(false, 86_400_000, "quota_exhausted")]), [rate, quota])).toBe("0123456789abcdef");
    expect(deniedQuotaOf(at(false, [outcome(false, 90_000_000), outcome(false, 86_400_000, "quota_exhausted")]), [rate, quota])).toBeNull();
  });

  it("counts a cost larger than the quota as denied by the quota", () => {
    expect(deniedQuotaOf(at(false, [outcome(true, 0), outcome(false, 0, "cost_exceeds_limit")]), [rate, quota])).toBe("0123456789abcdef");
  });
});

// ---------------------------------------------------------------------------------------------
// Through the engine: the usage fields a decision server would flush.

const T0 = 1_800_000_000_000 - (1_800_000_000_000 % 60_000) + 1_000;

function policy(): PolicyFileInput {
  return {
    version: 1,
    defaults: { failureMode: "open" },
    operations: [{ name: "orders-read", match: ["GET /v1/orders"] }],
    tiers: [
      {
        name: "metered",
        weight: 1,
        limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 5, window: "1m" }],
        quotas: [{ operation: "*", period: "month", limit: 8, overage: "block" }],
      },
    ],
    globalCaps: [],
    tenants: [{ slug: "meter", name: "Meter", tier: "metered", keys: [{ name: "a", key: "sk_test_meter_0001" }] }],
  };
}


function setup() {
  const fixture = compileFixture(policy());
  let nowMs = T0;
  const clock = () => nowMs;
  const store = new CountingStore(createMemoryStore({ clock }));
  const usage = new UsageRecorder(null);
  const engine = new DecisionEngine({
    policy: () => fixture.doc,
    keyIndex: { peek: (hash) => fixture.keyIndex[hash] ?? null, fetch: async (hash) => fixture.keyIndex[hash] ?? null },
    store,
    localStore: createMemoryStore({ clock }),
    instances: 1,
    storeTimeoutMs: 25,
    breaker: new CircuitBreaker(),
    denyCache: new DenyCache(),
    usage,
    metrics: null,
    now: clock,
  });
  const quotaId = fixture.doc.tiers.metered!.quotas[0]!.id;
  const fields = () => {
    const out = new Map<string, number>();
    for (const m of usage.snapshot().values()) for (const [f, n] of m) out.set(f, (out.get(f) ?? 0) + n);
    return out;
  };
  return { engine, store, quotaId, fields, advance: (ms: number) => (nowMs += ms) };
}

describe("usage accounting of quota denials (engine)", () => {
  it("counts decisions denied by the quota apart from those a rate limit denied, deny-cache answers included", async () => {
    const s = setup();
    const ask = () => s.engine.decide({ key: "sk_test_meter_0001", operation: "GET /v1/orders" });
    // Minute 1: 5 pass, the next 2 are refused by the per-minute limit (quota 5/8 used).
    for (let i = 0; i < 5; i++) expect((await ask()).allowed).toBe(true);
    expect((await ask()).reason).toBe("rate_limited");
    expect((await ask()).reason).toBe("rate_limited");
    // Minute 2: 3 pass (quota 8/8), then the quota refuses; the repeat is answered from the deny cache.
    s.advance(60_000);
    for (let i = 0; i < 3; i++) expect((await ask()).allowed).toBe(true);
    expect((await ask()).reason).toBe("quota_exhausted");
    const callsBefore = s.store.calls;
    expect((await ask()).reason).toBe("quota_exhausted");
    expect((await ask()).reason).toBe("quota_exhausted");
    expect(s.store.calls).toBe(callsBefore);

    const f = s.fields();
    expect(f.get("d|meter|metered|orders-read|allowed")).toBe(8);
    expect(f.get("d|meter|metered|orders-read|denied")).toBe(5);
    expect(f.get(`q|meter|${s.quotaId}`)).toBe(3);
    expect([...f.keys()].filter((k) => k.startsWith("q|"))).toEqual([`q|meter|${s.quotaId}`]);
  });

  it("records no quota denial for a dry run", async () => {
    const s = setup();
    for (let i = 0; i < 8; i++) {
      s.advance(60_000);
      await s.engine.decide({ key: "sk_test_meter_0001", operation: "GET /v1/orders" });
    }
    s.advance(60_000);
    const dry = await s.engine.decide({ key: "sk_test_meter_0001", operation: "GET /v1/orders", dryRun: true });
    expect(dry.reason).toBe("quota_exhausted");
    expect([...s.fields().keys()].filter((k) => k.startsWith("q|"))).toEqual([]);
  });
});
