import { describe, expect, it } from "vitest";
import { createMemoryStore } from "../store/memory";
import type { CounterStore } from "../store/types";
import { CircuitBreaker } from "./breaker";
import { UNRESOLVED_TENANT } from "./checks";
import { DecisionEngine } from "./engine";
import { compileFixture } from "./testing/fixture";
import { KeyIndexMissingError } from "./ports";

// Two tiers with different rows for one `local` operation, so "the strictest binds" is visible.
const fixture = compileFixture({
  version: 1,
  defaults: { failureMode: "open" },
  operations: [
    { name: "search", match: ["GET /v1/search"], failureMode: "local" },
    { name: "reads", match: ["GET /v1/reads"] },
  ],
  tiers: [
    { name: "free", weight: 1, limits: [{ operation: "search", scope: "tenant", algorithm: "fixed_window", limit: 4, window: "1m" }] },
    {
      name: "pro",
      weight: 4,
      limits: [
        { operation: "search", scope: "tenant", algorithm: "fixed_window", limit: 100, window: "1m" },
        { operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 3, window: "1m" },
      ],
    },
  ],
  tenants: [{ slug: "acme", name: "Acme", tier: "pro", keys: [{ name: "a", key: "sk_known_key_000001" }] }],
});
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % 60_000) + 1_000;

const downStore: CounterStore = {
  check: () => Promise.reject(new Error("ECONNREFUSED")),
  release: () => Promise.resolve(false),
  settle: () => Promise.reject(new Error("ECONNREFUSED")),
  close: () => Promise.resolve(),
};

function engine(fetch: () => Promise<string | null>) {
  let nowMs = T0;
  const breaker = new CircuitBreaker();
  const e = new DecisionEngine({
    policy: () => fixture.doc,
    // Nothing cached: every key has to be fetched, and the fetch fails.
    keyIndex: { peek: () => undefined, fetch },
    store: downStore,
    localStore: createMemoryStore({ clock: () => nowMs }),
    instances: 2,
    storeTimeoutMs: 25,
    breaker,
    denyCache: null,
    usage: null,
    metrics: null,
    now: () => nowMs,
  });
  return { e, breaker, advance: (ms: number) => (nowMs += ms) };
}

describe("failure mode local with a key that cannot be resolved (issue #17, defect 2)", () => {
  it("is counted against every tier's rows at once on one shared subject: all unresolvable keys together get one local share of the strictest limit", async () => {
    const { e } = engine(() => Promise.reject(new Error("ECONNREFUSED")));
    const answers = [];
    for (const key of ["sk_u1", "sk_u1", "sk_u2", "sk_u3", "sk_u4", "sk_u5"]) answers.push(await e.decide({ key, operation: "GET /v1/search" }));
    // free's tenant limit 4 ÷ 2 instances = 2 for every unresolvable key together; pro's per-key
    // limit 3 ÷ 2 = 1 per key (so sk_u1's second request is denied by it).
    expect(answers.map((a) => [a.allowed, a.degraded, a.reason])).toEqual([
      [true, true, "ok"],
      [false, true, "rate_limited"],
      [true, true, "ok"],
      [false, true, "rate_limited"],
      [false, true, "rate_limited"],
      [false, true, "rate_limited"],
    ]);
    // It is nobody's tenant in the answer (its tenant is unknown).
    expect(answers.every((a) => a.tenant === null && a.tier === null)).toBe(true);
    expect(UNRESOLVED_TENANT).not.toMatch(/^[a-z0-9]/);
  });

  it("applies while the breaker is open too, and an open operation stays open", async () => {
    const { e, breaker } = engine(() => Promise.reject(new Error("ECONNREFUSED")));
    for (let i = 0; i < 25; i++) await e.decide({ key: `sk_r${i}`, operation: "GET /v1/reads" });
    expect(breaker.state).toBe("open");
    const reads = await e.decide({ key: "sk_x", operation: "GET /v1/reads" });
    expect(reads).toMatchObject({ allowed: true, degraded: true });
    const allowed = [];
    for (let i = 0; i < 10; i++) allowed.push((await e.decide({ key: `sk_s${i}`, operation: "GET /v1/search" })).allowed);
    expect(allowed.filter(Boolean)).toHaveLength(2);
  });

  it("a lost key index (the store answered without it) takes the failure mode without opening the breaker", async () => {
    const { e, breaker } = engine(() => Promise.reject(new KeyIndexMissingError()));
    for (let i = 0; i < 50; i++) {
      const a = await e.decide({ key: `sk_m${i}`, operation: "GET /v1/reads" });
      expect(a).toMatchObject({ allowed: true, degraded: true, reason: "ok" });
    }
    expect(breaker.state).toBe("closed");
  });
});
