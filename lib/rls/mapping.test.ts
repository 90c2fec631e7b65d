import { describe, expect, it } from "vitest";
import { CircuitBreaker } from "../decision/breaker";
import { DecisionEngine, type DecisionRequest } from "../decision/engine";
import { compileFixture, FIXTURE_KEYS } from "../decision/testing/fixture";
import { createMemoryStore } from "../store/memory";
import { clientNetworkOrUnknown, currentLimitOf, descriptorToken, parsePolicyItem, planRateLimit, rateLimitResponse, REASON_HEADER } from "./mapping";
import type { DecisionAnswer } from "../decision/answer";
import type { RlsDescriptorMessage, RlsRequestMessage } from "./protos";

const DOMAIN = { domain: "sluice" };
const entries = (pairs: Record<string, string>) => Object.entries(pairs).map(([key, value]) => ({ key, value }));
const rls = (descriptors: RlsDescriptorMessage[], extra: Partial<RlsRequestMessage> = {}): RlsRequestMessage => ({ domain: "sluice", descriptors, ...extra });

function planned(message: RlsRequestMessage): DecisionRequest[] {
  const plan = planRateLimit(message, DOMAIN);
  if (!plan.ok) throw new Error(plan.error.message);
  return plan.requests;
}

function refused(message: RlsRequestMessage): { field: string; message: string } {
  const plan = planRateLimit(message, DOMAIN);
  if (plan.ok) throw new Error("expected an error");
  return plan.error;
}

describe("RLS request → decision requests", () => {
  it("maps the example's descriptor (api_key, remote_address, :method, :path) to one /v1/check request, query dropped", () => {
    const requests = planned(rls([{ entries: entries({ api_key: "sk_1", remote_address: "203.0.113.7", method: "GET", path: "/v1/orders/42?expand=1" }) }]));
    expect(requests).toEqual([{ key: "sk_1", ip: "203.0.113.7", operation: "GET /v1/orders/42" }]);
  });

  it("reads tenant, operation and masked_remote_address, one decision per descriptor in order", () => {
    const requests = planned(
      rls([
        { entries: entries({ tenant: "acme", operation: "export" }) },
        { entries: entries({ api_key: "sk_2", masked_remote_address: "203.0.113.77/24", operation: "GET /v1/search" }) },
      ]),
    );
    expect(requests).toEqual([
      { tenant: "acme", operation: "export" },
      { key: "sk_2", ip: "203.0.113.0/24", operation: "GET /v1/search" },
    ]);
  });

  it("takes the descriptor's hits_addend as the cost, else the request's; 0 or absent leaves the operation's own cost", () => {
    const d = (hits?: number) => ({ entries: entries({ api_key: "k", operation: "export" }), ...(hits === undefined ? {} : { hits_addend: { value: hits } }) });
    expect(planned(rls([d(7), d(), d(0)], { hits_addend: 3 })).map((r) => r.cost)).toEqual([7, 3, 3]);
    expect(planned(rls([d()])).map((r) => r.cost)).toEqual([undefined]);
    expect(planned(rls([d()], { hits_addend: 0 })).map((r) => r.cost)).toEqual([undefined]);
  });

  it("ignores other entry keys and a descriptor's limit override", () => {
    const requests = planned(
      rls([{ entries: entries({ generic_key: "x", destination_cluster: "app", api_key: "k", header_match: "y", operation: "export" }), limit: { requests_per_unit: 1, unit: "SECOND" } }]),
    );
    expect(requests).toEqual([{ key: "k", operation: "export" }]);
  });

  it("an empty or absent api_key is an unknown key for the engine, not an error (a client controls that header)", () => {
    expect(planned(rls([{ entries: entries({ api_key: "", operation: "export" }) }]))).toEqual([{ key: "", operation: "export" }]);
    expect(planned(rls([{ entries: entries({ remote_address: "203.0.113.7", operation: "export" }) }]))).toEqual([{ key: "", ip: "203.0.113.7", operation: "export" }]);
  });

  it("cuts a client's over-long path so the operation fits 512 characters instead of failing the call", () => {
    const [r] = planned(rls([{ entries: entries({ api_key: "k", method: "GET", path: `/v1/${"a".repeat(5000)}?q=${"b".repeat(100)}` }) }]));
    expect(r!.operation.length).toBe(512);
    expect(r!.operation.startsWith("GET /v1/aaa")).toBe(true);
  });

  it("canonicalises client addresses so every spelling shares one counter", () => {
    const ipOf = (value: string, key = "remote_address") => planned(rls([{ entries: entries({ api_key: "k", [key]: value, operation: "export" }) }]))[0]!.ip;
    expect(ipOf("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(ipOf("2001:DB8:0:0:0:0:0:1")).toBe("2001:db8::1");
    expect(ipOf("2001:db8::7/64", "masked_remote_address")).toBe("2001:db8::/64");
    expect(ipOf("::ffff:203.0.113.7/120", "masked_remote_address")).toBe("203.0.113.0/24");
  });

  it("an unparseable address or network is the shared unknown subject, never an error nor \"no IP limit\"", () => {
    const ipOf = (value: string, key: string) => planned(rls([{ entries: entries({ api_key: "k", [key]: value, operation: "export" }) }]))[0]!.ip;
    expect(ipOf("not-an-ip", "remote_address")).toBe("unknown");
    expect(ipOf("", "remote_address")).toBe("unknown");
    for (const bad of ["10.0.0.0", "10.0.0.0/33", "1.2.3.4/-1", "1.2.3.4/08", "x/8"]) expect(clientNetworkOrUnknown(bad)).toBe("unknown");
    expect(clientNetworkOrUnknown("0.0.0.0/0")).toBe("0.0.0.0/0");
    expect(clientNetworkOrUnknown("2001:db8:1:2:3:4:5:6/128")).toBe("2001:db8:1:2:3:4:5:6/128");
  });

  it.each([
    ["another domain", { domain: "envoy", descriptors: [{ entries: entries({ api_key: "k", operation: "x" }) }] }, "domain"],
    ["no domain", { descriptors: [{ entries: entries({ api_key: "k", operation: "x" }) }] }, "domain"],
    ["no descriptors", rls([]), "descriptors"],
    ["too many descriptors", rls(Array.from({ length: 101 }, () => ({ entries: entries({ api_key: "k", operation: "x" }) }))), "descriptors"],
    ["a descriptor without entries", rls([{ entries: entries({ api_key: "k", operation: "x" }) }, { entries: [] }]), "descriptors[1].entries"],
    ["an empty entry", rls([{ entries: [{ key: "api_key", value: "k" }, { key: "", value: "" }] }]), "descriptors[0].entries[1].key"],
    ["an entry without a key", rls([{ entries: [{ value: "v" }] }]), "descriptors[0].entries[0].key"],
    ["a key given twice", rls([{ entries: [...entries({ api_key: "k", operation: "x" }), { key: "api_key", value: "j" }] }]), "descriptors[0].entries[2].key"],
    ["api_key and tenant", rls([{ entries: entries({ api_key: "k", tenant: "acme", operation: "x" }) }]), "descriptors[0]"],
    ["operation and method", rls([{ entries: entries({ api_key: "k", operation: "x", method: "GET", path: "/" }) }]), "descriptors[0]"],
    ["method without path", rls([{ entries: entries({ api_key: "k", method: "GET" }) }]), "descriptors[0]"],
    ["no operation", rls([{ entries: entries({ api_key: "k" }) }]), "descriptors[0]"],
    ["a bad method", rls([{ entries: entries({ api_key: "k", method: "GE T", path: "/" }) }]), "descriptors[0].entries[1].value"],
    ["an over-long operation name", rls([{ entries: entries({ api_key: "k", operation: "x".repeat(513) }) }]), "descriptors[0].entries[1].value"],
    ["a cost over 10^9", rls([{ entries: entries({ api_key: "k", operation: "x" }), hits_addend: { value: 1_000_000_001 } }]), "descriptors[0].hits_addend"],
    ["a request cost over 10^9", rls([{ entries: entries({ api_key: "k", operation: "x" }) }], { hits_addend: 4_000_000_000 }), "hits_addend"],
  ])("refuses %s, naming the field", (_what, message, field) => {
    const error = refused(message as RlsRequestMessage);
    expect(error.field).toBe(field);
    expect(error.message.startsWith(`${field}: `)).toBe(true);
  });
});

// A minute boundary plus 1 s, so the fixture's one-minute windows have 59 s left.
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % 60_000) + 1_000;

function memoryEngine() {
  const fixture = compileFixture();
  const clock = () => T0;
  return new DecisionEngine({
    policy: () => fixture.doc,
    keyIndex: { peek: (h) => fixture.keyIndex[h] ?? null, fetch: async (h) => fixture.keyIndex[h] ?? null },
    store: createMemoryStore({ clock }),
    localStore: createMemoryStore({ clock }),
    instances: 1,
    storeTimeoutMs: 25,
    breaker: new CircuitBreaker(),
    denyCache: null,
    usage: null,
    metrics: null,
    now: clock,
  });
}

describe("the service token in descriptors (gateways without gRPC metadata)", () => {
  it("is the sluice_token entry every descriptor carries, the same in all; it is no decision input", () => {
    const d = (token?: string) => ({ entries: entries({ api_key: "k", operation: "x", ...(token === undefined ? {} : { sluice_token: token }) }) });
    expect(descriptorToken(rls([d("t1"), d("t1")]))).toBe("t1");
    expect(descriptorToken(rls([d("t1"), d()]))).toBeUndefined();
    expect(descriptorToken(rls([d("t1"), d("t2")]))).toBeUndefined();
    expect(descriptorToken(rls([d("")]))).toBeUndefined();
    expect(descriptorToken(rls([]))).toBeUndefined();
    expect(planned(rls([d("t1")]))).toEqual([{ key: "k", operation: "x" }]);
  });
});

describe("decision answers → RLS response", () => {
  it("OK ×5 then OVER_LIMIT, with the limit, what remains, an honest reset and the /v1/check headers", async () => {
    const engine = memoryEngine();
    const request = { key: FIXTURE_KEYS.acme, operation: "GET /v1/orders/1" };
    for (let i = 0; i < 5; i++) {
      const answer = await engine.decide(request);
      const { response } = rateLimitResponse([answer]);
      expect(response.overall_code).toBe("OK");
      expect(response.statuses).toEqual([
        { code: "OK", current_limit: { name: "free-api_key", requests_per_unit: 5, unit: "MINUTE" }, limit_remaining: 4 - i, duration_until_reset: { seconds: 59, nanos: 0 } },
      ]);
      expect(response.response_headers_to_add).toEqual(Object.entries(answer.headers).map(([key, value]) => ({ key, value })));
    }
    const denied = await engine.decide(request);
    const { response } = rateLimitResponse([denied]);
    expect(response.overall_code).toBe("OVER_LIMIT");
    expect(response.statuses[0]).toMatchObject({ code: "OVER_LIMIT", limit_remaining: 0, duration_until_reset: { seconds: 59 } });
    const headers = Object.fromEntries(response.response_headers_to_add.map((h) => [h.key, h.value]));
    expect(headers).toMatchObject({ "Retry-After": "59", "RateLimit-Remaining": "0", RateLimit: '"free-api_key";r=0;t=59', [REASON_HEADER]: "rate_limited" });
    expect(response.request_headers_to_add).toEqual([]);
  });

  it("a window that is not one unit is unit UNKNOWN with the same number; a month quota is MONTH", async () => {
    const engine = memoryEngine();
    const ip = rateLimitResponse([await engine.decide({ key: FIXTURE_KEYS.big, operation: "GET /v1/orders/1", ip: "203.0.113.7" })]);
    expect(ip.response.statuses[0]!.current_limit).toEqual({ name: "pro-orders-read-ip", requests_per_unit: 2, unit: "UNKNOWN" });
    const quota = rateLimitResponse([await engine.decide({ key: FIXTURE_KEYS.quota, operation: "GET /v1/orders/1" })]);
    expect(quota.response.statuses[0]!.current_limit).toEqual({ name: "quota-month", requests_per_unit: 3, unit: "MONTH" });
  });

  it("unknown keys and suspended tenants are OVER_LIMIT with their reason and no limit or Retry-After", async () => {
    const engine = memoryEngine();
    for (const [key, reason] of [["sk_nobody", "unknown_key"], ["", "unknown_key"], [FIXTURE_KEYS.suspended, "tenant_suspended"]] as const) {
      const { response } = rateLimitResponse([await engine.decide({ key, operation: "GET /v1/orders/1" })]);
      expect(response.overall_code).toBe("OVER_LIMIT");
      expect(response.statuses).toEqual([{ code: "OVER_LIMIT", limit_remaining: 0 }]);
      expect(response.response_headers_to_add).toEqual([{ key: REASON_HEADER, value: reason }]);
    }
  });

  it("a shadow denial is OK", async () => {
    const engine = memoryEngine();
    await engine.decide({ key: FIXTURE_KEYS.shadow, operation: "GET /v1/orders/1" });
    const answer = await engine.decide({ key: FIXTURE_KEYS.shadow, operation: "GET /v1/orders/1" });
    expect(answer.shadowDenied).toBe(true);
    expect(rateLimitResponse([answer]).response.overall_code).toBe("OK");
  });

  it("a concurrency lease goes to the upstream request on OK, and is handed back for release when another descriptor denies", async () => {
    const engine = memoryEngine();
    const lease = await engine.decide({ key: FIXTURE_KEYS.conc, operation: "GET /v1/orders/1" });
    const ok = rateLimitResponse([lease]);
    expect(ok.response.request_headers_to_add).toEqual([{ key: "x-sluice-lease", value: lease.leaseId }]);
    expect(ok.leasesToRelease).toEqual([]);
    const unknown = await engine.decide({ key: "sk_nobody", operation: "GET /v1/orders/1" });
    const denied = rateLimitResponse([lease, unknown]);
    expect(denied.response.overall_code).toBe("OVER_LIMIT");
    expect(denied.response.statuses.map((s) => s.code)).toEqual(["OK", "OVER_LIMIT"]);
    expect(denied.response.request_headers_to_add).toEqual([]);
    expect(denied.leasesToRelease).toEqual([lease.leaseId]);
  });

  it("with several descriptors the headers are the denial that lasts longest: one no wait cures beats a timed one", async () => {
    const engine = memoryEngine();
    for (let i = 0; i < 5; i++) await engine.decide({ key: FIXTURE_KEYS.acme, operation: "GET /v1/orders/1" });
    const limited = await engine.decide({ key: FIXTURE_KEYS.acme, operation: "GET /v1/orders/1" });
    const allowed = await engine.decide({ key: FIXTURE_KEYS.big, operation: "GET /v1/orders/1" });
    const timed = rateLimitResponse([allowed, limited]).response.response_headers_to_add;
    expect(timed).toContainEqual({ key: "Retry-After", value: "59" });
    const suspended = await engine.decide({ key: FIXTURE_KEYS.suspended, operation: "GET /v1/orders/1" });
    expect(rateLimitResponse([limited, suspended]).response.response_headers_to_add).toEqual([{ key: REASON_HEADER, value: "tenant_suspended" }]);
  });

  it("reads back the RateLimit-Policy items answer.ts writes, quoted names included", () => {
    expect(parsePolicyItem('"free-api_key";q=5;w=60')).toEqual({ name: "free-api_key", quota: 5, windowSeconds: 60 });
    expect(parsePolicyItem('"conc-tenant";q=1')).toEqual({ name: "conc-tenant", quota: 1, windowSeconds: 0 });
    expect(parsePolicyItem('"a\\"b\\\\c";q=2;w=1')).toEqual({ name: 'a"b\\c', quota: 2, windowSeconds: 1 });
    expect(parsePolicyItem("garbage")).toBeNull();
  });

  it("gives every answer of one limit the same current_limit, which no response can change for the next", () => {
    const answer = (policy: string) => ({ headers: { "RateLimit-Policy": policy } }) as unknown as DecisionAnswer;
    const first = currentLimitOf(answer('"api";q=100;w=60'));
    expect(first).toEqual({ name: "api", requests_per_unit: 100, unit: "MINUTE" });
    expect(currentLimitOf(answer('"api";q=100;w=60'))).toBe(first);
    expect(() => Object.assign(first!, { requests_per_unit: 1 })).toThrow(TypeError);
    expect(currentLimitOf(answer('"api";q=100;w=30'))).toEqual({ name: "api", requests_per_unit: 100, unit: "UNKNOWN" });
    expect(currentLimitOf(answer("garbage"))).toBeUndefined();
    expect(currentLimitOf(answer("garbage"))).toBeUndefined();
  });
});
