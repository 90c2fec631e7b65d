/**
 * The rate limit service examples, replayed against a real decision server over real gRPC:
 * examples/gateways/envoy-rls.yaml, istio-envoyfilter.yaml, envoy-gateway-ratelimit.yaml (plain
 * Envoy configuration, read as Envoy reads it) and contour-ratelimit.yaml (translated the way
 * Contour's internal/envoy/v3/ratelimit.go does). Envoy is not installed here (not in Debian, no
 * container engine), so test/envoy-ratelimit.ts models what its ratelimit filter does: the
 * descriptors the route actions produce, the call, and what the end client then sees (status,
 * x-envoy-ratelimited, RateLimit and X-RateLimit headers, gRPC statuses).
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml, parseAllDocuments, stringify as stringifyYaml } from "yaml";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { type ClientRequest, type ClientView, closeEnvoyModel, type EnvoyModel, type Json, throughEnvoy } from "../../test/envoy-ratelimit";
import { freePort } from "../net/ports";
import { rlsClient } from "../rls/protos";
import { compileFixture, writeFixturePolicy } from "./testing/fixture";
import type { PolicyFileInput } from "../policy/policy-file";
import { importEnvoyConfigs } from "../services/policy/import-envoy";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";

const EXAMPLES = path.resolve(import.meta.dirname, "../../examples/gateways");
/** The service token every example carries; the test's decision server accepts it. */
const EXAMPLE_TOKEN = "sl_svc_gateway_test_token_0001";
const KEY = (name: string) => `sk_test_rls_${name}_0001`;
const KEYS = ["envoy", "grpc", "export", "strip", "istio", "eg", "contour", "warm"];

let redis: Redis;
let server: SpawnedServer;

/** The policy the examples' tenant runs under (version 1). */
function fixtureFile(): PolicyFileInput {
  return {
    version: 1,
    defaults: { failureMode: "open" },
    operations: [
      { name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] },
      { name: "export", match: ["POST /v1/exports"] },
      { name: "grpc-orders", match: ["POST /orders.v1.Orders/*"] },
    ],
    tiers: [
      {
        name: "free",
        limits: [
          // Exact logs over an hour: no window edge inside the test.
          { operation: "orders-read", scope: "api_key", algorithm: "sliding_window_log", limit: 5, window: "1h" },
          { operation: "grpc-orders", scope: "api_key", algorithm: "sliding_window_log", limit: 5, window: "1h" },
          { operation: "export", scope: "api_key", algorithm: "sliding_window_log", limit: 20, window: "1h" },
        ],
      },
    ],
    globalCaps: [],
    tenants: [{ slug: "acme", name: "Acme", tier: "free", keys: KEYS.map((k) => ({ name: k, key: KEY(k) })) }],
  };
}

beforeAll(async () => {
  const prefix = `${testRedisPrefix()}rls${randomBytes(3).toString("hex")}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  redis = new Redis(testRedisUrl());
  const fixture = compileFixture(fixtureFile());
  await writeFixturePolicy(redis, fixture);
  // SLUICE_RLS_DESCRIPTOR_TOKENS: contour-ratelimit.yaml's token travels in the descriptors, as it says.
  server = await spawnDecisionServer({ REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: EXAMPLE_TOKEN, SLUICE_RLS_DESCRIPTOR_TOKENS: "1" }, { waitReady: true });
  // A fresh process compiles its gRPC path on the first calls (200 ms on this loaded machine): warm
  // it up so the examples' 100 ms timeout measures steady decisions, as it would on a running server.
  const warm = rlsClient(server.grpcAddress);
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${EXAMPLE_TOKEN}`);
  for (let i = 0; i < 20; i++) {
    await new Promise((resolve) =>
      warm.ShouldRateLimit({ domain: "sluice", descriptors: [{ entries: [{ key: "api_key", value: KEY("warm") }, { key: "operation", value: "grpc-orders" }] }] }, metadata, { deadline: Date.now() + 5_000 }, resolve),
    );
  }
  warm.close();
}, 120_000);

afterAll(async () => {
  closeEnvoyModel();
  await server?.stop();
  redis?.disconnect();
});

const read = (file: string) => readFileSync(path.join(EXAMPLES, file), "utf8");
const at = (v: unknown, ...keys: (string | number)[]): Json => {
  let cur: unknown = v;
  for (const k of keys) cur = (cur as Record<string | number, unknown>)[k];
  return cur as Json;
};

/** envoy-rls.yaml: the listener's ratelimit filter and route configuration, the cluster's address. */
function envoyModel(): EnvoyModel & { exampleAddress: string; token: string } {
  const config = parseYaml(read("envoy-rls.yaml")) as Json;
  const hcm = at(config, "static_resources", "listeners", 0, "filter_chains", 0, "filters", 0, "typed_config");
  const filter = at((hcm.http_filters as Json[]).find((f) => f.name === "envoy.filters.http.ratelimit"), "typed_config");
  const clusterName = String(at(filter, "rate_limit_service", "grpc_service", "envoy_grpc").cluster_name);
  const cluster = (at(config, "static_resources").clusters as Json[]).find((c) => c.name === clusterName)!;
  const socket = at(cluster, "load_assignment", "endpoints", 0, "lb_endpoints", 0, "endpoint", "address", "socket_address");
  const auth = (at(filter, "rate_limit_service", "grpc_service").initial_metadata as Json[])[0]!;
  return {
    filter,
    routeConfig: at(hcm, "route_config"),
    rlsAddress: server.grpcAddress,
    internalOnlyHeaders: at(hcm, "route_config").internal_only_headers as string[],
    exampleAddress: `${String(socket.address)}:${String(socket.port_value)}`,
    token: String(auth.value),
  };
}

/** istio-envoyfilter.yaml: the HTTP_FILTER patch's filter, the VIRTUAL_HOST patch's rate_limits on a catch-all route. */
function istioModel(): EnvoyModel & { clusterName: string } {
  const patches = at(parseYaml(read("istio-envoyfilter.yaml")), "spec").configPatches as Json[];
  const filter = at(patches.find((p) => p.applyTo === "HTTP_FILTER"), "patch", "value", "typed_config");
  const vhost = at(patches.find((p) => p.applyTo === "VIRTUAL_HOST"), "patch", "value");
  return {
    filter,
    routeConfig: { virtual_hosts: [{ domains: ["*"], rate_limits: vhost.rate_limits, routes: [{ match: { prefix: "/" }, route: {} }] }] },
    rlsAddress: server.grpcAddress,
    clusterName: String(at(filter, "rate_limit_service", "grpc_service", "envoy_grpc").cluster_name),
  };
}

/** envoy-gateway-ratelimit.yaml: the listener patch's filter, the route patch's rate_limits, the new cluster. */
function envoyGatewayModel(): EnvoyModel & { cluster: Json } {
  const patches = at(parseYaml(read("envoy-gateway-ratelimit.yaml")), "spec").jsonPatches as Json[];
  const value = (type: string) => at(patches.find((p) => String(p.type).endsWith(type)), "operation", "value");
  const filter = at(value("Listener"), "typed_config");
  return {
    filter,
    routeConfig: { virtual_hosts: [{ domains: ["*"], rate_limits: value("RouteConfiguration"), routes: [{ match: { prefix: "/" }, route: {} }] }] },
    rlsAddress: server.grpcAddress,
    cluster: value("Cluster"),
  };
}

/** contour-ratelimit.yaml, translated as Contour does: descriptor entries → route actions, rateLimitService → the filter. */
function contourModel(): EnvoyModel {
  const docs = parseAllDocuments(read("contour-ratelimit.yaml")).map((d) => d.toJS() as Json);
  const settings = at(parseYaml(String(at(docs.find((d) => d.kind === "ConfigMap"), "data")["contour.yaml"])), "rateLimitService");
  const extension = docs.find((d) => d.kind === "ExtensionService")!;
  const proxy = docs.find((d) => d.kind === "HTTPProxy")!;
  const action = (entry: Json): Json => {
    if (entry.genericKey) return { generic_key: { descriptor_key: at(entry, "genericKey").key, descriptor_value: at(entry, "genericKey").value } };
    if (entry.requestHeader) return { request_headers: { header_name: at(entry, "requestHeader").headerName, descriptor_key: at(entry, "requestHeader").descriptorKey } };
    if (entry.remoteAddress) return { remote_address: {} };
    if (entry.requestHeaderValueMatch) {
      const m = at(entry, "requestHeaderValueMatch");
      const headers = (m.headers as Json[]).map((h) => {
        if (h.present === undefined) throw new Error("only `present` header conditions are in the model");
        return { name: h.name, present_match: h.present };
      });
      return { header_value_match: { descriptor_value: m.value, expect_match: m.expectMatch ?? true, headers } };
    }
    throw new Error(`Contour descriptor entry ${Object.keys(entry)[0]} is not in the model`);
  };
  const routes = (at(proxy, "spec").routes as Json[]).map((r) => ({
    match: { prefix: at(r, "conditions", 0).prefix },
    route: { rate_limits: (at(r, "rateLimitPolicy", "global").descriptors as Json[]).map((d) => ({ actions: (d.entries as Json[]).map(action) })) },
  }));
  return {
    filter: {
      domain: settings.domain,
      timeout: at(extension, "spec", "timeoutPolicy").response,
      failure_mode_deny: settings.failOpen !== true,
      enable_x_ratelimit_headers: settings.enableXRateLimitHeaders === true ? "DRAFT_VERSION_03" : "OFF",
      rate_limited_as_resource_exhausted: settings.enableResourceExhaustedCode === true,
      // Contour's ExtensionService sets no metadata: the token is in the descriptors.
      rate_limit_service: { grpc_service: { envoy_grpc: { cluster_name: `extension/${String(settings.extensionService)}` } } },
    },
    routeConfig: { virtual_hosts: [{ domains: ["*"], routes }] },
    rlsAddress: server.grpcAddress,
  };
}

const orders = (key: string | null, extra: Partial<ClientRequest> = {}): ClientRequest => ({
  method: "GET",
  path: "/v1/orders/42?expand=items",
  headers: key === null ? {} : { "X-Api-Key": key },
  remoteAddress: "203.0.113.7",
  ...extra,
});

/**
 * Envoy gives up on an answer later than the filter's `timeout` (100 ms) and lets the request
 * through; Sluice has still decided it. On this shared 2-core machine a call now and then takes
 * longer than that, so a late answer is what Envoy would do, not a failure: a passing request
 * that came late is checked for what the client saw (the app's answer) and still counts.
 */
const late = (view: ClientView) => /DEADLINE_EXCEEDED/.test(view.rlsError ?? "");

/** For a call that consumes nothing when it is denied or unknown: again while Envoy gave up on it. */
async function answered(call: () => Promise<ClientView>): Promise<ClientView> {
  let view = await call();
  for (let i = 0; i < 5 && late(view); i++) view = await call();
  expect(late(view)).toBe(false);
  return view;
}

/**
 * A request Sluice admits: the app's answer reaches the client, with the RateLimit headers unless
 * the answer came late, or was degraded: past the product's 25 ms store budget on a loaded machine,
 * Sluice passes it on the operation's failure mode (open) without counting it, and an RLS answer
 * has no field to say so, only no headers.
 */
function expectPassed(view: ClientView, remaining: number, checkHeaders: (v: ClientView) => void = () => undefined): "on_time" | "late" | "degraded" {
  expect(view.status).toBe(200);
  expect(view.upstream).toBeDefined();
  if (late(view)) return "late";
  expect(view.rlsError).toBeUndefined();
  if (view.headers["ratelimit-remaining"] === undefined && view.headers["x-ratelimit-remaining"] === undefined) return "degraded";
  expect(view.headers["ratelimit-remaining"]).toBe(String(remaining));
  checkHeaders(view);
  return "on_time";
}

/** 5 counted requests reach the app with the RateLimit headers counting down, the next is Envoy's 429 with Sluice's headers. */
async function fiveThenDenied(model: EnvoyModel, key: string, request: (key: string) => ClientRequest = orders) {
  let counted = 0;
  let onTime = 0;
  for (let sent = 0; counted < 5; sent++) {
    expect(sent, "more than 5 of 10 passes were degraded").toBeLessThan(10);
    const remaining = 4 - counted;
    const passed = expectPassed(await throughEnvoy(model, request(key)), remaining, (view) => {
      expect(view.headers["x-ratelimit-remaining"]).toBe(String(remaining));
      expect(view.headers["x-ratelimit-limit"]).toMatch(/^5, 5;w=3600;name="free-[a-z-]+-api_key"$/);
    });
    if (passed !== "degraded") counted++;
    if (passed === "on_time") onTime++;
  }
  expect(onTime).toBeGreaterThan(0);
  const denied = await answered(() => throughEnvoy(model, request(key)));
  expect(denied.status).toBe(429);
  expect(denied.upstream).toBeUndefined();
  expect(denied.headers).toMatchObject({ "x-envoy-ratelimited": "true", "x-sluice-reason": "rate_limited", "ratelimit-remaining": "0", "x-ratelimit-remaining": "0" });
  const wait = Number(denied.headers["retry-after"]);
  expect(wait).toBeGreaterThan(3_500);
  expect(wait).toBeLessThanOrEqual(3_600);
  expect(denied.headers["x-ratelimit-reset"]).toBe(String(wait));
  expect(denied.headers["ratelimit-reset"]).toBe(String(wait));
  return denied;
}

describe("examples/gateways/envoy-rls.yaml through a model of Envoy's ratelimit filter", () => {
  it("points at the decision server's default gRPC port with the service token", () => {
    const model = envoyModel();
    expect(model.exampleAddress).toBe("127.0.0.1:8081");
    expect(model.token).toBe(`Bearer ${EXAMPLE_TOKEN}`);
    expect(model.filter).toMatchObject({ domain: "sluice", failure_mode_deny: false, enable_x_ratelimit_headers: "DRAFT_VERSION_03", rate_limited_as_resource_exhausted: true });
  });

  it("sends one descriptor per request (api_key, remote_address, method, path); 5 pass, the 6th is a 429 with Sluice's headers", async () => {
    const model = envoyModel();
    const denied = await fiveThenDenied(model, KEY("envoy"));
    expect(denied.descriptors).toEqual([
      {
        entries: [
          { key: "api_key", value: KEY("envoy") },
          { key: "remote_address", value: "203.0.113.7" },
          { key: "method", value: "GET" },
          { key: "path", value: "/v1/orders/42?expand=items" },
        ],
      },
    ]);
  });

  it("answers a gRPC client over its limit with RESOURCE_EXHAUSTED (rate_limited_as_resource_exhausted)", async () => {
    const call = (key: string): ClientRequest => ({ method: "POST", path: "/orders.v1.Orders/Get", headers: { "x-api-key": key }, remoteAddress: "203.0.113.7", grpc: true });
    for (let i = 0; i < 5; i++) expect((await throughEnvoy(envoyModel(), call(KEY("grpc")))).grpcStatus).toBe(0);
    const denied = await answered(() => throughEnvoy(envoyModel(), call(KEY("grpc"))));
    expect(denied).toMatchObject({ status: 200, grpcStatus: 8 });
    expect(denied.headers["x-envoy-ratelimited"]).toBe("true");
    // Without the option Envoy maps its 429 to UNAVAILABLE.
    const plain = { ...envoyModel(), filter: { ...envoyModel().filter, rate_limited_as_resource_exhausted: false } };
    expect((await answered(() => throughEnvoy(plain, call(KEY("grpc"))))).grpcStatus).toBe(14);
  });

  it("charges the export route's hits_addend (10) against the key's 20 exports an hour", async () => {
    const exportCall: ClientRequest = { method: "POST", path: "/v1/exports", headers: { "x-api-key": KEY("export") }, remoteAddress: "203.0.113.7" };
    const first = await throughEnvoy(envoyModel(), exportCall);
    expect(first.descriptors[0]!.hits_addend).toEqual({ value: 10 });
    const onTime = [expectPassed(first, 10), expectPassed(await throughEnvoy(envoyModel(), exportCall), 0)];
    expect(onTime).toContain("on_time");
    expect((await answered(() => throughEnvoy(envoyModel(), exportCall))).status).toBe(429);
  });

  it("a request without X-Api-Key still asks Sluice (skip_if_absent) and gets 429 unknown_key, never unlimited", async () => {
    const view = await answered(() => throughEnvoy(envoyModel(), orders(null)));
    expect(view.descriptors[0]!.entries!.map((e) => e.key)).toEqual(["remote_address", "method", "path"]);
    expect(view).toMatchObject({ status: 429, headers: { "x-sluice-reason": "unknown_key", "x-envoy-ratelimited": "true" } });
    // Without skip_if_absent Envoy would not have called Sluice at all.
    const strict = envoyModel();
    const actions = at(strict.routeConfig, "virtual_hosts", 0).rate_limits as Json[];
    at(actions[0], "actions", 0).request_headers = { header_name: "x-api-key", descriptor_key: "api_key" };
    expect(await throughEnvoy(strict, orders(null))).toMatchObject({ status: 200, descriptors: [] });
  });

  it("strips a client's own x-sluice-lease / x-sluice-delay-ms (internal_only_headers) before the app sees them", async () => {
    const view = await throughEnvoy(envoyModel(), orders(KEY("strip"), { headers: { "x-api-key": KEY("strip"), "x-sluice-lease": "forged", "x-sluice-delay-ms": "9999" } }));
    expect(view.status).toBe(200);
    expect(view.upstream?.["x-sluice-lease"]).toBeUndefined();
    expect(view.upstream?.["x-sluice-delay-ms"]).toBeUndefined();
  });

  it("lets the request through when Sluice cannot be reached (failure_mode_deny: false), and answers 500 with failure_mode_deny", async () => {
    const closed = { ...envoyModel(), rlsAddress: `127.0.0.1:${await freePort()}` };
    const open = await throughEnvoy(closed, orders(KEY("strip")));
    expect(open.rlsError).toBeDefined();
    expect(open.status).toBe(200);
    const deny = { ...closed, filter: { ...closed.filter, failure_mode_deny: true } };
    expect((await throughEnvoy(deny, orders(KEY("strip")))).status).toBe(500);
  });
});

describe("the Istio, Envoy Gateway and Contour snippets", () => {
  it("Istio's EnvoyFilter produces the same descriptor as envoy-rls.yaml and the same answers", async () => {
    const model = istioModel();
    expect(model.clusterName).toBe("outbound|8081||sluice-decision.sluice.svc.cluster.local");
    const denied = await fiveThenDenied(model, KEY("istio"));
    const envoy = await throughEnvoy(envoyModel(), orders(KEY("istio")));
    expect(denied.descriptors).toEqual(envoy.descriptors);
  });

  it("Envoy Gateway's EnvoyPatchPolicy produces the same descriptor, its cluster speaks h2c to port 8081", async () => {
    const model = envoyGatewayModel();
    expect(at(model.cluster, "load_assignment", "endpoints", 0, "lb_endpoints", 0, "endpoint", "address", "socket_address").port_value).toBe(8081);
    expect(at(model.cluster, "typed_extension_protocol_options")).toBeDefined();
    expect(String(at(model.filter, "rate_limit_service", "grpc_service", "envoy_grpc").cluster_name)).toBe(String(model.cluster.name));
    const denied = await fiveThenDenied(model, KEY("eg"));
    expect(denied.descriptors).toEqual((await throughEnvoy(envoyModel(), orders(KEY("eg")))).descriptors);
  });

  it("Contour's HTTPProxy names the operation, carries the token in every descriptor, and covers keyless requests", async () => {
    const model = contourModel();
    const denied = await fiveThenDenied(model, KEY("contour"));
    expect(denied.descriptors).toEqual([
      {
        entries: [
          { key: "sluice_token", value: EXAMPLE_TOKEN },
          { key: "api_key", value: KEY("contour") },
          { key: "remote_address", value: "203.0.113.7" },
          { key: "operation", value: "orders-read" },
        ],
      },
    ]);
    const keyless = await answered(() => throughEnvoy(model, orders(null)));
    expect(keyless).toMatchObject({ status: 429, headers: { "x-sluice-reason": "unknown_key" } });
  });
});

describe("examples/gateways/envoy-ratelimit-import: an Envoy that used envoyproxy/ratelimit, its config imported unchanged", () => {
  const EXAMPLE = path.join(EXAMPLES, "envoy-ratelimit-import");

  /**
   * The example's Envoy, its placeholder token replaced by the one this server accepts (what its
   * CHANGED line asks of a user), and its 0.1 s timeout lifted: a sign-in counts even when it
   * comes back late, so on this shared machine a late answer would let one through unseen.
   */
  function importModel(): EnvoyModel {
    const config = parseYaml(readFileSync(path.join(EXAMPLE, "envoy.yaml"), "utf8")) as Json;
    const hcm = at(config, "static_resources", "listeners", 0, "filter_chains", 0, "filters", 0, "typed_config");
    const filter = structuredClone(at((hcm.http_filters as Json[]).find((f) => f.name === "envoy.filters.http.ratelimit"), "typed_config"));
    at(filter, "rate_limit_service", "grpc_service").initial_metadata = [{ key: "authorization", value: `Bearer ${EXAMPLE_TOKEN}` }];
    filter.timeout = "5s";
    return { filter, routeConfig: at(hcm, "route_config"), rlsAddress: server.grpcAddress };
  }

  beforeAll(async () => {
    // `sluice import envoy runtime/ratelimit --into policy.yaml`, then publish (version 2).
    const runtime = path.join(EXAMPLE, "runtime/ratelimit/config/edge.yaml");
    const imported = importEnvoyConfigs([{ name: runtime, text: readFileSync(runtime, "utf8") }], { into: { name: "policy.yaml", text: stringifyYaml(fixtureFile()) } });
    if (!imported.ok) throw new Error(JSON.stringify(imported.issues));
    const file = parseYaml(imported.text) as PolicyFileInput;
    await writeFixturePolicy(redis, compileFixture(file, 2));
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      const ready = (await fetch(`${server.url}/readyz`).then((r) => r.json(), () => ({}))) as { policyVersion?: number };
      if (ready.policyVersion === 2) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("the decision server did not load the imported policy");
  }, 30_000);

  it("answers the imported domain as the config says: 5 sign-ins a minute per address, the blocked address never, with Envoy's 429", async () => {
    const model = importModel();
    // Their fixed window is aligned to the minute: start inside one.
    if (new Date().getUTCSeconds() > 45) await new Promise((r) => setTimeout(r, (61 - new Date().getUTCSeconds()) * 1000));
    const address = `198.51.100.${Math.floor(Math.random() * 200) + 1}`;
    const signIn = () => throughEnvoy(model, { method: "POST", path: "/login", remoteAddress: address });
    for (let i = 0; i < 5; i++) {
      const passed = await signIn();
      expect(passed.status).toBe(200);
      expect(passed.upstream).toBeDefined();
    }
    const denied = await signIn();
    // The route's own rate_limits (Envoy applies the virtual host's only where a route has none).
    expect(denied.descriptors).toEqual([{ entries: [{ key: "generic_key", value: "login" }, { key: "remote_address", value: address }] }]);
    expect(denied.rlsError).toBeUndefined();
    expect(denied.status).toBe(429);
    expect(denied.upstream).toBeUndefined();
    // Envoy's X-RateLimit headers from the statuses: the closest limit, the minute's 5, none left.
    expect(denied.headers).toMatchObject({ "x-envoy-ratelimited": "true", "x-ratelimit-limit": expect.stringMatching(/^5(, |$)/), "x-ratelimit-remaining": "0" });

    const blocked = await throughEnvoy(model, { method: "GET", path: "/", remoteAddress: "192.0.2.66" });
    expect(blocked.status).toBe(429);
    const other = await throughEnvoy(model, { method: "GET", path: "/", remoteAddress: "198.51.100.250" });
    expect(other.rlsError).toBeUndefined();
    expect(other).toMatchObject({ status: 200, headers: { "x-ratelimit-limit": expect.stringMatching(/^50(, |$)/), "x-ratelimit-remaining": "49" } });
  });
});
