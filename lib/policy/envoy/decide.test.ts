import { describe, expect, it } from "vitest";
import { encodeEnvoySubject } from "../counter-keys";
import { compileRateLimitService } from "./compile";
import { envoyOutcomes, envoyResponse, planEnvoyRequest, type EnvoyRequest } from "./decide";
import { decideEnvoy, envoyCounterKey, EnvoyMemoryCounters } from "./memory";
import { rateLimitServiceSchema, type RateLimitServiceInput } from "./schema";

const T0 = Date.UTC(2026, 11, 7); // a UTC midnight: every unit's window starts here
const service = (s: RateLimitServiceInput) => compileRateLimitService(rateLimitServiceSchema.parse(s));
const one = (domain: string, key: string, value: string, extra: Partial<EnvoyRequest> = {}): EnvoyRequest => ({ domain, descriptors: [{ entries: [{ key, value }] }], ...extra });

function driver(s: ReturnType<typeof service>) {
  const counters = new EnvoyMemoryCounters();
  return (request: EnvoyRequest, atMs: number) => {
    const d = decideEnvoy(s, request, counters, T0 + atMs);
    if (!d.ok) throw new Error(d.error.message);
    return d.response;
  };
}

describe("the request itself", () => {
  const s = service({ domains: [{ domain: "d", descriptors: [{ key: "k", rate_limit: { unit: "second", requests_per_unit: 1 } }] }] });

  it("refuses hits_addend outside uint32 and a limit override without a unit, naming the field", () => {
    const bad = (r: EnvoyRequest) => {
      const p = planEnvoyRequest(s, r);
      return p.ok ? null : p.error.message;
    };
    expect(bad({ ...one("d", "k", "v"), hits_addend: 4_294_967_296 })).toBe("hits_addend: expected an integer from 0 to 4294967295");
    expect(bad({ domain: "d", descriptors: [{ entries: [], hits_addend: { value: -1 } }] })).toBe("descriptors[0].hits_addend: expected an integer from 0 to 4294967295");
    expect(bad({ domain: "d", descriptors: [{ entries: [], limit: { requests_per_unit: 1, unit: "UNKNOWN" } }] })).toMatch(/^descriptors\[0\]\.limit\.unit: expected one of SECOND/);
  });

  it("answers an unknown domain OK, unless the section says unknownDomain: error", () => {
    expect(driver(s)(one("elsewhere", "k", "v"), 0)).toEqual({ overall_code: "OK", statuses: [{ code: "OK", limit_remaining: 0 }] });
    const strict = service({ unknownDomain: "error", domains: [{ domain: "d" }] });
    const p = planEnvoyRequest(strict, one("elsewhere", "k", "v"));
    expect(p.ok ? null : p.error).toEqual({ field: "domain", message: 'domain: unknown domain "elsewhere"', reason: "unknown_domain" });
    expect(planEnvoyRequest(undefined, one("d", "k", "v")).ok).toBe(true);
  });

  it("global shadow mode (their SHADOW_MODE) counts and reports over-limit statuses but answers OK overall", () => {
    const decide = driver(service({ shadowMode: true, domains: [{ domain: "d", descriptors: [{ key: "k", rate_limit: { unit: "second", requests_per_unit: 1 } }] }] }));
    decide(one("d", "k", "v"), 0);
    expect(decide(one("d", "k", "v"), 0)).toEqual({
      overall_code: "OK",
      statuses: [{ code: "OVER_LIMIT", current_limit: { name: "", requests_per_unit: 1, unit: "SECOND" }, limit_remaining: 0, duration_until_reset: { seconds: 1 } }],
    });
  });
});

describe("outcomes for usage and metrics", () => {
  it("say which descriptor was denied, which was over in shadow mode, and which had no rule", () => {
    const s = service({
      domains: [{ domain: "d", descriptors: [{ key: "hard", rate_limit: { unit: "second", requests_per_unit: 0 } }, { key: "soft", shadow_mode: true, rate_limit: { unit: "second", requests_per_unit: 0 } }, { key: "free", rate_limit: { unlimited: true } }] }],
    });
    const p = planEnvoyRequest(s, { domain: "d", descriptors: [{ entries: [{ key: "hard", value: "v" }] }, { entries: [{ key: "soft", value: "v" }] }, { entries: [{ key: "free", value: "v" }] }, { entries: [{ key: "other", value: "v" }] }] });
    if (!p.ok) throw new Error(p.error.message);
    const counts = p.plan.descriptors.map((x) => (x.kind === "limit" ? { counting: "envoy" as const, after: 1 } : null));
    expect(envoyOutcomes(p.plan, counts)).toEqual(["denied", "shadow_denied", "unlimited", "no_rule"]);
    expect(envoyResponse(p.plan, counts, T0).statuses.map((x) => x.code)).toEqual(["OVER_LIMIT", "OK", "OK", "OK"]);
  });
});

describe("counter keys", () => {
  it("carry the whole counter in the hash tag, the rule's id and the values; their window appended", () => {
    const s = service({ domains: [{ domain: "d", descriptors: [{ key: "k", rate_limit: { unit: "minute", requests_per_unit: 1 } }] }] });
    const p = planEnvoyRequest(s, one("d", "k", "a|b{c}"));
    const plan = p.ok ? p.plan.descriptors[0] : null;
    if (plan?.kind !== "limit") throw new Error("expected a limit");
    expect(envoyCounterKey(plan, T0 + 61_000, "sl:")).toBe(`sl:{e:${plan.rule.id}:a%7Cb%7Bc%7D}:${(T0 + 60_000) / 1000}`);
  });

  it("encode values injectively", () => {
    expect(encodeEnvoySubject(["a|b"])).not.toBe(encodeEnvoySubject(["a", "b"]));
    expect(encodeEnvoySubject(["%7C"])).not.toBe(encodeEnvoySubject(["|"]));
  });

  it("keep a rule's id when its numbers change, and change it when it counts differently", () => {
    const id = (rate_limit: object) => service({ domains: [{ domain: "d", descriptors: [{ key: "k", rate_limit }] }] }).domains[0]!.descriptors[0]!.rule!.id;
    expect(id({ unit: "minute", requests_per_unit: 1 })).toBe(id({ unit: "minute", requests_per_unit: 500 }));
    expect(id({ unit: "minute", requests_per_unit: 1 })).not.toBe(id({ unit: "minute", requests_per_unit: 1, algorithm: "sliding_window_counter" }));
  });
});

describe("Sluice's additions answer with Sluice's algorithms", () => {
  const swc = service({ domains: [{ domain: "d", descriptors: [{ key: "k", rate_limit: { unit: "minute", requests_per_unit: 10, algorithm: "sliding_window_counter" } }] }] });
  const fixed = service({ domains: [{ domain: "d", descriptors: [{ key: "k", rate_limit: { unit: "minute", requests_per_unit: 10 } }] }] });

  it("sliding_window_counter refuses the burst across a window edge that their fixed window lets through", () => {
    const burst = (s: typeof swc) => {
      const decide = driver(s);
      let passed = 0;
      for (let i = 0; i < 10; i++) if (decide(one("d", "k", "v"), 59_000).overall_code === "OK") passed++;
      for (let i = 0; i < 10; i++) if (decide(one("d", "k", "v"), 61_000).overall_code === "OK") passed++;
      return passed;
    };
    expect(burst(fixed)).toBe(20);
    expect(burst(swc)).toBeLessThan(12);
  });

  it("a denied request consumes nothing with a Sluice algorithm (their fixed window counts it)", () => {
    const bucket = service({ domains: [{ domain: "d", descriptors: [{ key: "k", rate_limit: { unit: "minute", requests_per_unit: 10, algorithm: "fixed_window" } }] }] });
    const decide = driver(bucket);
    expect(decide({ ...one("d", "k", "v"), hits_addend: 8 }, 0).statuses[0]!.limit_remaining).toBe(2);
    expect(decide({ ...one("d", "k", "v"), hits_addend: 5 }, 0).overall_code).toBe("OVER_LIMIT");
    expect(decide({ ...one("d", "k", "v"), hits_addend: 1 }, 0)).toMatchObject({ overall_code: "OK", statuses: [{ limit_remaining: 1 }] });
  });

  it("a window that is no unit reports unit UNKNOWN with its exact reset; one that is a unit reports the unit", () => {
    const s = service({ domains: [{ domain: "d", descriptors: [{ key: "a", rate_limit: { window: "90s", requests_per_unit: 3 } }, { key: "b", rate_limit: { window: "60s", requests_per_unit: 3 } }] }] });
    const decide = driver(s);
    expect(decide(one("d", "a", "v"), 100_000).statuses[0]).toEqual({ code: "OK", current_limit: { name: "", requests_per_unit: 3, unit: "UNKNOWN" }, limit_remaining: 2, duration_until_reset: { seconds: 80 } });
    expect(decide(one("d", "b", "v"), 100_000).statuses[0]?.current_limit?.unit).toBe("MINUTE");
  });

  it("a calendar period counts until the end of the UTC month and resets with it", () => {
    const s = service({ domains: [{ domain: "d", descriptors: [{ key: "k", rate_limit: { period: "month", requests_per_unit: 2 } }] }] });
    const decide = driver(s);
    const endOfMonth = Date.UTC(2027, 0, 1) - T0;
    expect(decide(one("d", "k", "v"), 0).statuses[0]).toEqual({ code: "OK", current_limit: { name: "", requests_per_unit: 2, unit: "MONTH" }, limit_remaining: 1, duration_until_reset: { seconds: endOfMonth / 1000 } });
    decide(one("d", "k", "v"), 0);
    expect(decide(one("d", "k", "v"), endOfMonth - 1000).overall_code).toBe("OVER_LIMIT");
    expect(decide(one("d", "k", "v"), endOfMonth).statuses[0]?.limit_remaining).toBe(1);
  });

  it("shadow_mode with an algorithm answers OK and consumes nothing when over", () => {
    const s = service({ domains: [{ domain: "d", descriptors: [{ key: "k", shadow_mode: true, rate_limit: { unit: "second", requests_per_unit: 1, algorithm: "sliding_window_log" } }] }] });
    const decide = driver(s);
    decide(one("d", "k", "v"), 0);
    expect(decide(one("d", "k", "v"), 0)).toMatchObject({ overall_code: "OK", statuses: [{ code: "OK", limit_remaining: 0 }] });
    expect(decide(one("d", "k", "v"), 1_000).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 0 });
  });

  it("hits_addend 0 looks without counting", () => {
    const decide = driver(swc);
    const look = { domain: "d", descriptors: [{ entries: [{ key: "k", value: "v" }], hits_addend: { value: 0 } }] };
    decide(one("d", "k", "v"), 0);
    expect(decide(look, 0).statuses[0]?.limit_remaining).toBe(9);
    expect(decide(look, 0).statuses[0]?.limit_remaining).toBe(9);
  });
});
