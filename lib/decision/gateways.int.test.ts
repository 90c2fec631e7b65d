/**
 * The README's gateway snippets, run against a real decision server and real Redis:
 * - examples/gateways/nginx.conf under Debian's nginx (`auth_request`). .ci/run installs nginx; a
 *   developer machine without it skips that part and says so (CI=true never skips).
 * - examples/gateways/traefik.yml replayed by a model of Traefik's forwardAuth middleware. Traefik
 *   is not packaged for Debian, so it cannot run here; the model follows Traefik's
 *   pkg/middlewares/auth/forward.go: a GET to `address` with the client's headers (hop-by-hop ones
 *   removed) plus X-Forwarded-For/-Method/-Proto/-Host/-Uri; a non-2xx answer goes back to the
 *   client as it is (status, headers, body); on 2xx, `authResponseHeaders` are copied from the
 *   answer into the request the app receives. The headers middleware sets customRequestHeaders,
 *   an empty value removing the header.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { freePort } from "../net/ports";
import { compileFixture, writeFixturePolicy } from "./fixture";
import { spawnDecisionServer, type SpawnedServer } from "./harness";

const ROOT = path.resolve(import.meta.dirname, "../..");
const EXAMPLES = path.join(ROOT, "examples/gateways");
/** The service token both example files carry; the test's decision server accepts it. */
const EXAMPLE_TOKEN = "sl_svc_gateway_test_token_0001";
const NGINX_KEY = "sk_test_gateway_nginx_0001";
const TRAEFIK_KEY = "sk_test_gateway_traefik_0001";
/** The examples' addresses, replaced by this run's free ports. */
const EXAMPLE_DECISION = "127.0.0.1:8788";
const EXAMPLE_GATEWAY = "127.0.0.1:9080";
const EXAMPLE_APP = "127.0.0.1:9100";

let redis: Redis;
let server: SpawnedServer;

beforeAll(async () => {
  const prefix = `${testRedisPrefix()}gw${randomBytes(3).toString("hex")}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  redis = new Redis(testRedisUrl());
  // 5 requests per hour per key, exact (a log, no window edge inside the test).
  const fixture = compileFixture({
    version: 1,
    defaults: { failureMode: "open" },
    operations: [{ name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] }],
    tiers: [{ name: "free", limits: [{ operation: "*", scope: "api_key", algorithm: "sliding_window_log", limit: 5, window: "1h" }] }],
    globalCaps: [],
    tenants: [{ slug: "acme", name: "Acme", tier: "free", keys: [{ name: "nginx", key: NGINX_KEY }, { name: "traefik", key: TRAEFIK_KEY }] }],
  });
  await writeFixturePolicy(redis, fixture);
  server = await spawnDecisionServer(
    { REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: EXAMPLE_TOKEN, REDIS_TIMEOUT_MS: "500" },
    { waitReady: true },
  );
});

afterAll(async () => {
  await server?.stop();
  redis?.disconnect();
});

function hasNginx(): boolean {
  try {
    execFileSync("nginx", ["-v"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

async function waitListening(url: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (await fetch(url).then(() => true, () => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} did not come up`);
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
  let nginx: ChildProcess | undefined;
  let dir: string;
  let gateway: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "sluice-nginx-"));
    // nginx's workers run as nobody: they must reach the temp paths.
    chmodSync(dir, 0o755);
    const [gatewayPort, appPort] = [await freePort(), await freePort()];
    gateway = `http://127.0.0.1:${gatewayPort}`;
    const conf = readFileSync(path.join(EXAMPLES, "nginx.conf"), "utf8")
      .replaceAll(EXAMPLE_DECISION, `127.0.0.1:${server.port}`)
      .replaceAll(EXAMPLE_GATEWAY, `127.0.0.1:${gatewayPort}`)
      .replaceAll(EXAMPLE_APP, `127.0.0.1:${appPort}`)
      .replaceAll("/tmp/gw", dir);
    expect(conf).toContain(EXAMPLE_TOKEN);
    writeFileSync(path.join(dir, "nginx.conf"), conf);
    nginx = spawn("nginx", ["-p", dir, "-c", path.join(dir, "nginx.conf"), "-g", "daemon off;"], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    nginx.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    nginx.once("exit", (code) => {
      if (code !== 0 && code !== null) process.stderr.write(`nginx exited ${code}: ${stderr}\n`);
    });
    await waitListening(`${gateway}/`);
  });

  afterAll(() => {
    nginx?.kill("SIGQUIT");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

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
});

// ---- Traefik ------------------------------------------------------------------------------------

const headersMiddleware = z.object({ headers: z.object({ customRequestHeaders: z.record(z.string(), z.string()) }) });
const forwardAuthMiddleware = z.object({
  forwardAuth: z.object({ address: z.string().url(), authResponseHeaders: z.array(z.string()).default([]) }),
});
const traefikConfig = z.object({
  http: z.object({
    middlewares: z.record(z.string(), z.union([headersMiddleware, forwardAuthMiddleware])),
    routers: z.object({ api: z.object({ rule: z.string(), middlewares: z.array(z.string()), service: z.string() }) }),
  }),
});

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
      const authHeaders: Headers = {};
      for (const [k, v] of Object.entries(req)) if (!HOP_HEADERS.includes(k) && k !== "host" && k !== "content-length") authHeaders[k] = v;
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
  let app: http.Server;
  let request: ReturnType<typeof traefikModel>;

  beforeAll(async () => {
    // The app echoes the request headers it received (as JSON in a response header).
    app = http.createServer((req, res) => {
      const saw: Headers = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") saw[k] = v;
      res.writeHead(200, { "x-app-saw": JSON.stringify(saw), "content-type": "text/plain" });
      res.end("hello from the app\n");
    });
    await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
    const address = app.address();
    const appPort = typeof address === "object" && address ? address.port : 0;
    const text = readFileSync(path.join(EXAMPLES, "traefik.yml"), "utf8").replaceAll(EXAMPLE_DECISION, `127.0.0.1:${server.port}`);
    const config = traefikConfig.parse(parseYaml(text));
    expect(config.http.routers.api.rule).toBe("PathPrefix(`/v1/`)");
    request = traefikModel(config, `http://127.0.0.1:${appPort}`);
  });

  afterAll(async () => {
    await new Promise((resolve) => app?.close(resolve));
  });

  it("lets 5 requests through with the decision's headers on the app's request, never the service token; the 6th gets Sluice's 429", async () => {
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await request("GET", `/v1/orders/${i}?page=2`, { "X-Api-Key": TRAEFIK_KEY, Host: "api.example.test" }));
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
    expect(denied.headers["content-type"]).toBe("application/json");
    const body = JSON.parse(denied.body) as { reason: string; status: number; tenant: string; operation: string };
    expect(body).toMatchObject({ reason: "rate_limited", status: 429, tenant: "acme", operation: "orders-read" });
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
