/**
 * The gateway configurations of docs/gateways.md, run against a real decision server and real Redis:
 * - examples/gateways/nginx.conf under Debian's nginx (`auth_request`). `npm test` makes sure nginx
 *   is there (scripts/preflight.sh); vitest run on its own without it skips that part and says so
 *   (CI=true never skips).
 * - examples/gateways/traefik.yml replayed by a model of Traefik's forwardAuth middleware. Traefik
 *   is not packaged for Debian, so it cannot run here; the model follows Traefik's
 *   pkg/middlewares/auth/forward.go: a GET to `address` with the client's headers (hop-by-hop ones
 *   removed) plus X-Forwarded-For/-Method/-Proto/-Host/-Uri; a non-2xx answer goes back to the
 *   client as it is (status, headers, body); on 2xx, `authResponseHeaders` are copied from the
 *   answer into the request the app receives. The headers middleware sets customRequestHeaders,
 *   an empty value removing the header.
 * - examples/gateways/envoy.yaml replayed by a model of Envoy's ext_authz HTTP filter (Envoy is not
 *   packaged for Debian either). The model follows envoy source/extensions/filters/common/ext_authz/
 *   ext_authz_http_impl.cc: the client's method, `path_prefix` + the client's path, only the headers
 *   `allowed_headers` matches plus Authorization and Host, then `headers_to_add`; a 200 answer copies
 *   `allowed_upstream_headers` into the app's request and `allowed_client_headers_on_success` into
 *   the client's response; a 5xx is an error (`status_on_error`, no body); any other status goes to
 *   the client with every header but Host, and the body.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { compileFixture, writeFixturePolicy } from "./testing/fixture";
import { hasNginx, NGINX_EXAMPLE_TOKEN, startExampleNginx, type RunningNginx } from "./testing/nginx";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";

const ROOT = path.resolve(import.meta.dirname, "../..");
const EXAMPLES = path.join(ROOT, "examples/gateways");
/** The service token both example files carry; the test's decision server accepts it. */
const EXAMPLE_TOKEN = NGINX_EXAMPLE_TOKEN;
const NGINX_KEY = "sk_test_gateway_nginx_0001";
const TRAEFIK_KEY = "sk_test_gateway_traefik_0001";
const ENVOY_KEY = "sk_test_gateway_envoy_0001";
/** Keys of the forged-operation tests, one per gateway (their own counters). */
const SPOOF_KEYS = { nginx: "sk_test_gateway_spoof_nginx", traefik: "sk_test_gateway_spoof_traefik", envoy: "sk_test_gateway_spoof_envoy" };
/** The examples' addresses, replaced by this run's free ports. */
const EXAMPLE_DECISION = "127.0.0.1:8788";

let redis: Redis;
let server: SpawnedServer;

beforeAll(async () => {
  const prefix = `${testRedisPrefix()}gw${randomBytes(3).toString("hex")}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  redis = new Redis(testRedisUrl());
  // 5 requests per hour per key, exact (a log, no window edge inside the test); one export per hour.
  const fixture = compileFixture({
    version: 1,
    defaults: { failureMode: "open" },
    operations: [
      { name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] },
      { name: "catalog-read", match: ["GET /v1/catalog"] },
      { name: "export", match: ["POST /v1/exports"] },
    ],
    tiers: [
      {
        name: "free",
        limits: [
          { operation: "*", scope: "api_key", algorithm: "sliding_window_log", limit: 5, window: "1h" },
          { operation: "export", scope: "api_key", algorithm: "sliding_window_log", limit: 1, window: "1h" },
        ],
      },
    ],
    globalCaps: [],
    tenants: [
      {
        slug: "acme",
        name: "Acme",
        tier: "free",
        keys: [
          { name: "nginx", key: NGINX_KEY },
          { name: "traefik", key: TRAEFIK_KEY },
          { name: "envoy", key: ENVOY_KEY },
          ...Object.entries(SPOOF_KEYS).map(([name, key]) => ({ name: `spoof-${name}`, key })),
        ],
      },
    ],
  });
  await writeFixturePolicy(redis, fixture);
  server = await spawnDecisionServer(
    { REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: EXAMPLE_TOKEN },
    { waitReady: true },
  );
});

afterAll(async () => {
  await server?.stop();
  redis?.disconnect();
});

/** An app that answers every request, echoing the request headers it received (as JSON in X-App-Saw). */
async function startEchoApp(): Promise<{ url: string; close(): Promise<void> }> {
  const app = http.createServer((req, res) => {
    const saw: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") saw[k] = v;
    res.writeHead(200, { "x-app-saw": JSON.stringify(saw), "content-type": "text/plain" });
    res.end("hello from the app\n");
  });
  await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
  const address = app.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => app.close(() => resolve())) };
}


async function get(url: string, headers: Record<string, string>) {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

const nginxAvailable = hasNginx();
if (!nginxAvailable && process.env.CI !== "true") {
  process.stderr.write("gateways.int.test.ts: nginx is not installed, skipping the nginx snippet (apt-get install nginx-light)\n");
}

describe.skipIf(!nginxAvailable && process.env.CI !== "true")("nginx: examples/gateways/nginx.conf", () => {
  let nginx: RunningNginx | undefined;
  let gateway: string;

  beforeAll(async () => {
    nginx = await startExampleNginx(server.port);
    expect(nginx.conf).toContain(EXAMPLE_TOKEN);
    gateway = nginx.url;
  });

  afterAll(() => nginx?.stop());

  it("passes 5 requests of a key with RateLimit headers, then answers 429 with Retry-After; an unknown key gets 401", async () => {
    const answers = [];
    for (let i = 0; i < 7; i++) answers.push(await get(`${gateway}/v1/orders/${i}`, { "x-api-key": NGINX_KEY }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect(answers[0]!.body).toBe("hello from the app\n");
    expect(answers.slice(0, 5).map((a) => a.headers.get("ratelimit-remaining"))).toEqual(["4", "3", "2", "1", "0"]);
    expect(answers[0]!.headers.get("ratelimit-limit")).toBe("5");
    const denied = answers[5]!;
    expect(denied.body).toBe("rate limited\n");
    expect(denied.headers.get("ratelimit-remaining")).toBe("0");
    const retryAfter = Number(denied.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3600).toBe(true);
    expect(Number(denied.headers.get("ratelimit-reset"))).toBe(retryAfter);

    expect((await get(`${gateway}/v1/orders/1`, { "x-api-key": "sk_nobody_knows_this_key" })).status).toBe(401);
    expect((await get(`${gateway}/v1/orders/1`, {})).status).toBe(401);
  });

  it("decides the operation nginx saw: a client's own X-Forwarded-Method/-Uri or X-Original-* cannot turn its export into a catalog read", async () => {
    const statuses = [];
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${gateway}/v1/exports`, {
        method: "POST",
        headers: { "x-api-key": SPOOF_KEYS.nginx, ...FORGED_OPERATION },
        signal: AbortSignal.timeout(10_000),
      });
      await res.text();
      statuses.push(res.status);
    }
    // One export an hour: the second is denied, whatever the client claims it is.
    expect(statuses).toEqual([200, 429, 429, 429]);
  });
});

/** What a client sends to pass its request off as another operation (a catalog read is not limited to one an hour). */
const FORGED_OPERATION = {
  "x-forwarded-method": "GET",
  "x-forwarded-uri": "/v1/catalog",
  "x-original-method": "GET",
  "x-original-uri": "/v1/catalog",
};

/** Four exports of one key through a gateway model, claiming to be catalog reads, and a forged lease for the app: only the first export passes, and the forged headers never reach the app. */
async function forgedOperationRefused(request: (method: string, uri: string, headers: Headers) => Promise<GatewayAnswer>, key: string): Promise<void> {
  const answers: GatewayAnswer[] = [];
  for (let i = 0; i < 4; i++) answers.push(await request("POST", "/v1/exports", { "X-Api-Key": key, ...FORGED_OPERATION, "X-Sluice-Lease": "forged", "X-Sluice-Tenant": "someone-else" }));
  expect(answers.map((a) => a.status)).toEqual([200, 429, 429, 429]);
  expect(JSON.parse(answers[1]!.body)).toMatchObject({ operation: "export", reason: "rate_limited" });
  expect(answers[0]!.app?.["x-sluice-lease"]).toBeUndefined();
  expect(answers[0]!.app?.["x-sluice-tenant"]).toBe("acme");
}

// ---- Traefik ------------------------------------------------------------------------------------

const headersMiddleware = z.object({ headers: z.object({ customRequestHeaders: z.record(z.string(), z.string()) }) });
const forwardAuthMiddleware = z.object({
  forwardAuth: z.object({ address: z.string().url(), authRequestHeaders: z.array(z.string()).default([]), authResponseHeaders: z.array(z.string()).default([]) }),
});
const traefikConfig = z.object({
  http: z.object({
    middlewares: z.record(z.string(), z.union([headersMiddleware, forwardAuthMiddleware])),
    routers: z.object({ api: z.object({ rule: z.string(), middlewares: z.array(z.string()), service: z.string() }) }),
  }),
});

/** What a gateway model answers: the client's status, headers and body, and the app's request headers (null: not reached). */
interface GatewayAnswer {
  status: number;
  headers: Headers;
  body: string;
  app: Headers | null;
}

/**
 * Six requests of one key through a gateway model, against the 5-per-hour limit: the first five
 * reach the app with the decision's headers and never the service token, the sixth gets Sluice's
 * 429 with its headers and JSON body. Returns the answers for the gateway's own checks.
 */
async function fiveThenDenied(request: (method: string, uri: string, headers: Headers) => Promise<GatewayAnswer>, key: string): Promise<GatewayAnswer[]> {
  const answers: GatewayAnswer[] = [];
  for (let i = 0; i < 6; i++) answers.push(await request("GET", `/v1/orders/${i}?page=2`, { "X-Api-Key": key, Host: "api.example.test" }));
  expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429]);
  const allowed = answers.slice(0, 5);
  expect(allowed.map((a) => a.body)).toEqual(Array(5).fill("hello from the app\n"));
  expect(allowed.map((a) => a.app?.["ratelimit-remaining"])).toEqual(["4", "3", "2", "1", "0"]);
  for (const a of allowed) {
    expect(a.app?.["ratelimit-limit"]).toBe("5");
    expect(a.app?.["ratelimit-policy"]).toMatch(/;q=5;w=3600$/);
    expect(a.app?.["x-sluice-tenant"]).toBe("acme");
    expect(a.app).not.toHaveProperty("x-sluice-token");
  }
  const denied = answers[5]!;
  expect(denied.app).toBeNull();
  expect(denied.headers["ratelimit-remaining"]).toBe("0");
  const retryAfter = Number(denied.headers["retry-after"]);
  expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3600).toBe(true);
  expect(JSON.parse(denied.body)).toMatchObject({ reason: "rate_limited", status: 429, tenant: "acme", operation: "orders-read" });
  return answers;
}

/** Go's forward.HopHeaders (vulcand/oxy), which Traefik strips from what it forwards. */
const HOP_HEADERS = ["connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"];

type Headers = Record<string, string>;

/**
 * The model of Traefik's router with its middleware chain: returns the client's answer and what the
 * app received (null when the chain answered without reaching it).
 */
function traefikModel(config: z.infer<typeof traefikConfig>, appUrl: string) {
  const { middlewares, routers } = config.http;
  return async function request(
    method: string,
    uri: string,
    clientHeaders: Headers,
  ): Promise<{ status: number; headers: Headers; body: string; app: Headers | null }> {
    const req: Headers = Object.fromEntries(Object.entries(clientHeaders).map(([k, v]) => [k.toLowerCase(), v]));
    for (const name of routers.api.middlewares) {
      const m = middlewares[name];
      if (!m) throw new Error(`middleware ${name} is not defined`);
      if ("headers" in m) {
        for (const [k, v] of Object.entries(m.headers.customRequestHeaders)) {
          if (v === "") delete req[k.toLowerCase()];
          else req[k.toLowerCase()] = v;
        }
        continue;
      }
      // authRequestHeaders, when set, is the list of the client's headers that go along (filterForwardRequestHeaders).
      const allowed = m.forwardAuth.authRequestHeaders.map((h) => h.toLowerCase());
      const authHeaders: Headers = {};
      for (const [k, v] of Object.entries(req)) {
        if (!HOP_HEADERS.includes(k) && k !== "host" && k !== "content-length" && (allowed.length === 0 || allowed.includes(k))) authHeaders[k] = v;
      }
      Object.assign(authHeaders, {
        "x-forwarded-for": "127.0.0.1",
        "x-forwarded-method": method,
        "x-forwarded-proto": "http",
        "x-forwarded-host": "api.example.test",
        "x-forwarded-uri": uri,
      });
      const answer = await fetch(m.forwardAuth.address, { method: "GET", headers: authHeaders, redirect: "manual", signal: AbortSignal.timeout(10_000) });
      const body = await answer.text();
      if (answer.status < 200 || answer.status >= 300) {
        const headers: Headers = {};
        answer.headers.forEach((v, k) => {
          if (!HOP_HEADERS.includes(k)) headers[k] = v;
        });
        return { status: answer.status, headers, body, app: null };
      }
      for (const h of m.forwardAuth.authResponseHeaders) {
        const k = h.toLowerCase();
        delete req[k];
        const v = answer.headers.get(k);
        if (v !== null) req[k] = v;
      }
    }
    const res = await fetch(`${appUrl}${uri}`, { method, headers: req, signal: AbortSignal.timeout(10_000) });
    const seen = JSON.parse(res.headers.get("x-app-saw") ?? "{}") as Headers;
    return { status: res.status, headers: {}, body: await res.text(), app: seen };
  };
}

describe("Traefik: examples/gateways/traefik.yml, replayed by a model of its forwardAuth", () => {
  let app: Awaited<ReturnType<typeof startEchoApp>>;
  let request: ReturnType<typeof traefikModel>;

  beforeAll(async () => {
    app = await startEchoApp();
    const text = readFileSync(path.join(EXAMPLES, "traefik.yml"), "utf8").replaceAll(EXAMPLE_DECISION, `127.0.0.1:${server.port}`);
    const config = traefikConfig.parse(parseYaml(text));
    expect(config.http.routers.api.rule).toBe("PathPrefix(`/v1/`)");
    request = traefikModel(config, app.url);
  });

  afterAll(async () => {
    await app?.close();
  });

  it("lets 5 requests through with the decision's headers on the app's request, never the service token; the 6th gets Sluice's 429", async () => {
    const answers = await fiveThenDenied(request, TRAEFIK_KEY);
    expect(answers[5]!.headers["content-type"]).toBe("application/json");
  });

  it("decides the operation Traefik saw: a client's own X-Original-* or X-Forwarded-* never reach Sluice, nor its X-Sluice-* the app", async () => {
    await forgedOperationRefused(request, SPOOF_KEYS.traefik);
  });

  it("answers an unknown key 401 without reaching the app; a forward-auth without the service token is 401 unauthorized", async () => {
    const unknown = await request("GET", "/v1/orders/1", { "X-Api-Key": "sk_nobody_knows_this_key" });
    expect(unknown.status).toBe(401);
    expect(unknown.app).toBeNull();
    expect((JSON.parse(unknown.body) as { reason: string }).reason).toBe("unknown_key");

    const noToken = await fetch(`http://127.0.0.1:${server.port}/v1/forward-auth`, {
      headers: { "x-api-key": TRAEFIK_KEY, "x-forwarded-method": "GET", "x-forwarded-uri": "/v1/orders/1" },
    });
    expect(noToken.status).toBe(401);
    expect(((await noToken.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
  });
});

const stringMatcher = z.union([z.object({ exact: z.string() }), z.object({ prefix: z.string() })]);
const matcherList = z.object({ patterns: z.array(stringMatcher) });
const extAuthzConfig = z.object({
  failure_mode_allow: z.boolean(),
  status_on_error: z.object({ code: z.number().int() }).optional(),
  http_service: z.object({
    server_uri: z.object({ uri: z.string().url(), cluster: z.string(), timeout: z.string() }),
    path_prefix: z.string(),
    authorization_request: z.object({
      allowed_headers: matcherList,
      headers_to_add: z.array(z.object({ key: z.string(), value: z.string() })),
    }),
    authorization_response: z.object({ allowed_upstream_headers: matcherList, allowed_client_headers_on_success: matcherList }),
  }),
});
const envoyConfig = z.object({
  static_resources: z.object({
    listeners: z.array(
      z.object({
        filter_chains: z.array(
          z.object({
            filters: z.array(
              z.object({
                typed_config: z.object({
                  route_config: z.object({
                    internal_only_headers: z.array(z.string()).default([]),
                    virtual_hosts: z.array(z.object({ routes: z.array(z.object({ match: z.object({ prefix: z.string() }), route: z.object({ cluster: z.string() }) })) })),
                  }),
                  http_filters: z.array(z.object({ name: z.string(), typed_config: z.record(z.string(), z.unknown()) })),
                }),
              }),
            ),
          }),
        ),
      }),
    ),
  }),
});

function matches(list: z.infer<typeof matcherList>, name: string): boolean {
  return list.patterns.some((m) => ("exact" in m ? name === m.exact : name.startsWith(m.prefix)));
}

/** The model of Envoy's listener: internal_only_headers stripped from a request from outside, ext_authz (HTTP service), then the router to the app. */
function envoyModel(authz: z.infer<typeof extAuthzConfig>, internalOnly: string[], sluiceUrl: string, appUrl: string) {
  const { http_service: service } = authz;
  return async function request(method: string, pathAndQuery: string, clientHeaders: Headers) {
    // use_remote_address: Envoy sets X-Forwarded-For to the client's address.
    const req: Headers = { ...Object.fromEntries(Object.entries(clientHeaders).map(([k, v]) => [k.toLowerCase(), v])), "x-forwarded-for": "198.51.100.23" };
    for (const name of internalOnly) delete req[name.toLowerCase()];
    const authHeaders: Headers = {};
    for (const [k, v] of Object.entries(req)) {
      if (k === "authorization" || matches(service.authorization_request.allowed_headers, k)) authHeaders[k] = v;
    }
    for (const h of service.authorization_request.headers_to_add) authHeaders[h.key.toLowerCase()] = h.value;
    const answer = await fetch(`${sluiceUrl}${service.path_prefix}${pathAndQuery}`, { method, headers: authHeaders, signal: AbortSignal.timeout(10_000) });
    const answerBody = await answer.text();
    if (answer.status >= 500) return { status: authz.status_on_error?.code ?? 403, headers: {} as Headers, body: "", app: null };
    if (answer.status !== 200) {
      const headers: Headers = {};
      answer.headers.forEach((v, k) => {
        if (k !== "host" && !HOP_HEADERS.includes(k)) headers[k] = v;
      });
      return { status: answer.status, headers, body: answerBody, app: null };
    }
    const toClient: Headers = {};
    answer.headers.forEach((v, k) => {
      if (matches(service.authorization_response.allowed_upstream_headers, k)) req[k] = v;
      if (matches(service.authorization_response.allowed_client_headers_on_success, k)) toClient[k] = v;
    });
    const res = await fetch(`${appUrl}${pathAndQuery}`, { method, headers: req, signal: AbortSignal.timeout(10_000) });
    const seen = JSON.parse(res.headers.get("x-app-saw") ?? "{}") as Headers;
    return { status: res.status, headers: toClient, body: await res.text(), app: seen };
  };
}

describe("Envoy: examples/gateways/envoy.yaml, replayed by a model of its ext_authz HTTP filter", () => {
  let app: Awaited<ReturnType<typeof startEchoApp>>;
  let request: ReturnType<typeof envoyModel>;

  beforeAll(async () => {
    app = await startEchoApp();
    const config = envoyConfig.parse(parseYaml(readFileSync(path.join(EXAMPLES, "envoy.yaml"), "utf8")));
    const manager = config.static_resources.listeners[0]!.filter_chains[0]!.filters[0]!.typed_config;
    expect(manager.route_config.virtual_hosts[0]!.routes[0]).toEqual({ match: { prefix: "/v1/" }, route: { cluster: "app" } });
    expect(manager.http_filters.map((f) => f.name)).toEqual(["envoy.filters.http.ext_authz", "envoy.filters.http.router"]);
    const authz = extAuthzConfig.parse(manager.http_filters[0]!.typed_config);
    expect(authz.http_service.server_uri.uri).toBe(`http://${EXAMPLE_DECISION}`);
    request = envoyModel(authz, manager.route_config.internal_only_headers, `http://127.0.0.1:${server.port}`, app.url);
  });

  afterAll(async () => {
    await app?.close();
  });

  it("lets 5 requests through with the decision's headers on the app's request and the client's response; the 6th gets Sluice's 429", async () => {
    const answers = await fiveThenDenied(request, ENVOY_KEY);
    // allowed_client_headers_on_success: the client sees its budget too.
    expect(answers.slice(0, 5).map((a) => a.headers["ratelimit-remaining"])).toEqual(["4", "3", "2", "1", "0"]);
  });

  it("decides the method and path Envoy saw: a client's own X-Original-* or X-Forwarded-* never reach Sluice, nor its X-Sluice-* the app", async () => {
    await forgedOperationRefused(request, SPOOF_KEYS.envoy);
  });

  it("decides on the client's own method and path: a POST is its own operation, an unknown key 401 never reaches the app", async () => {
    const post = await request("POST", "/v1/orders", { "X-Api-Key": ENVOY_KEY });
    // The policy names only GET /v1/orders…, so the POST resolves to `*`: the same key's limit, already spent.
    expect(post.status).toBe(429);
    expect(JSON.parse(post.body)).toMatchObject({ operation: "*" });
    const unknown = await request("GET", "/v1/orders/1", { "X-Api-Key": "sk_nobody_knows_this_key" });
    expect(unknown.status).toBe(401);
    expect(unknown.app).toBeNull();
    expect(JSON.parse(unknown.body)).toMatchObject({ reason: "unknown_key" });
  });
});
