/**
 * The decision API contract (docs/decision-api.md) against a real `npm run decision` process and real Redis.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { sha256Hex } from "../redis/key-index";
import { keys } from "../redis/keys";
import { unindexApiKeys } from "../redis/policy";
import { listUsageMinutes, readUsageMinute } from "../redis/testing/usage-minutes";
import { compileFixture, FIXTURE_KEYS, fixturePolicyFile, writeFixturePolicy } from "./testing/fixture";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";

const TOKEN = "svc_test_token_0001";
const REDIS_TOKEN = "svc_from_redis_0001";
let prefix: string;
let redis: Redis;
let server: SpawnedServer;

function check(body: unknown, token = TOKEN, raw?: string) {
  return fetch(`${server.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: raw ?? JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
}

beforeAll(async () => {
  // A sub-prefix of this run's prefix: teardown still deletes it, and this file sees only its own keys.
  prefix = `${testRedisPrefix()}ds${randomBytes(3).toString("hex")}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  redis = new Redis(testRedisUrl());
  server = await spawnDecisionServer({
    REDIS_URL: testRedisUrl(),
    SLUICE_REDIS_PREFIX: prefix,
    SLUICE_SERVICE_TOKENS: TOKEN,
    POLICY_POLL_MS: "200",
  });
});

afterAll(async () => {
  await server?.stop();
  redis?.disconnect();
});

describe("decision server", () => {
  it("is live but not ready until a policy is loaded, then ready via the PUBLISH", async () => {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const before = await fetch(`${server.url}/readyz`);
    expect(before.status).toBe(503);
    expect((await check({ key: FIXTURE_KEYS.acme, operation: "GET /v1/orders" })).status).toBe(503);
    await writeFixturePolicy(redis, compileFixture(), [sha256Hex(REDIS_TOKEN)]);
    const deadline = Date.now() + 2_000;
    let ready = false;
    while (!ready && Date.now() < deadline) {
      ready = (await fetch(`${server.url}/readyz`)).status === 200;
      if (!ready) await new Promise((r) => setTimeout(r, 20));
    }
    expect(ready).toBe(true);
    expect(await (await fetch(`${server.url}/readyz`)).json()).toMatchObject({ ready: true, policyVersion: 1 });
  });

  it("POST /v1/check answers the documented body; denial with consistent headers and Retry-After", async () => {
    const answers = [];
    for (let i = 0; i < 6; i++) {
      const res = await check({ key: FIXTURE_KEYS.acme, operation: "GET /v1/orders/42", ip: "203.0.113.7", cost: 1 });
      expect(res.status).toBe(200);
      answers.push((await res.json()) as Record<string, unknown>);
    }
    expect(answers[0]).toMatchObject({ allowed: true, status: 200, reason: "ok", tenant: "acme", tier: "free", operation: "orders-read", policyVersion: 1, limit: 5, remaining: 4 });
    const d = answers[5]!;
    expect(Object.keys(d).sort()).toEqual(
      ["allowed", "status", "reason", "tenant", "tier", "operation", "policyVersion", "limit", "remaining", "resetSeconds", "retryAfterSeconds", "delayMs", "headers"].sort(),
    );
    expect(d).toMatchObject({ allowed: false, status: 429, reason: "rate_limited", remaining: 0, delayMs: 0 });
    const h = d.headers as Record<string, string>;
    const retry = d.retryAfterSeconds as number;
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect(h).toEqual({
      "RateLimit-Limit": "5",
      "RateLimit-Remaining": "0",
      "RateLimit-Reset": String(retry),
      "Retry-After": String(retry),
      "RateLimit-Policy": '"free-api_key";q=5;w=60',
      RateLimit: `"free-api_key";r=0;t=${retry}`,
    });
  });

  it("answers 401 unknown_key, 403 tenant_suspended as decisions (HTTP 200)", async () => {
    const u = await check({ key: "sk_unknown", operation: "GET /v1/orders" });
    expect(u.status).toBe(200);
    expect(await u.json()).toMatchObject({ allowed: false, status: 401, reason: "unknown_key", policyVersion: 1 });
    const s = await (await check({ key: FIXTURE_KEYS.suspended, operation: "GET /v1/orders" })).json();
    expect(s).toMatchObject({ allowed: false, status: 403, reason: "tenant_suspended", tenant: "sus" });
  });

  it("batch: each request decided independently, at most 100", async () => {
    const res = await check({
      requests: [
        { key: FIXTURE_KEYS.big, operation: "GET /v1/orders", ip: "198.51.100.1" },
        { key: "nope", operation: "GET /v1/orders" },
        { tenant: "quota", operation: "POST /v1/heavy", cost: 1, dryRun: true },
      ],
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { results: Record<string, unknown>[] };
    expect(body.results.map((r) => r.status)).toEqual([200, 401, 200]);
    expect(body.results[2]).toMatchObject({ dryRun: true, tenant: "quota" });
    const tooMany = await check({ requests: Array.from({ length: 101 }, () => ({ tenant: "big", operation: "x" })) });
    expect(tooMany.status).toBe(400);
    expect(await tooMany.json()).toMatchObject({ error: { code: "invalid_request", field: "requests" } });
  });

  it("explain lists every check with its counters", async () => {
    const body = (await (await check({ key: FIXTURE_KEYS.big, operation: "GET /v1/orders/1", ip: "198.51.100.9", explain: true })).json()) as {
      checks: { name: string; scope: string; limit: number; remaining: number }[];
    };
    expect(body.checks.map((c) => [c.name, c.scope, c.limit])).toEqual([
      ["pro-api_key", "api_key", 1_000_000],
      ["pro-orders-read-ip", "ip", 2],
    ]);
  });

  it("forward-auth: X-Forwarded-* or X-Original-*, key from X-Api-Key or Authorization, same headers", async () => {
    const ip = "192.0.2.44";
    // The gateway appends the client it saw: the rightmost X-Forwarded-For entry (docs/decision-api.md "Client addresses").
    const base = { "x-sluice-token": TOKEN, "x-api-key": FIXTURE_KEYS.big, "x-forwarded-for": `10.9.9.9, ${ip}` };
    const a = await fetch(`${server.url}/v1/forward-auth`, { headers: { ...base, "x-forwarded-method": "GET", "x-forwarded-uri": "/v1/orders/7?x=1" } });
    expect(a.status).toBe(200);
    expect(a.headers.get("ratelimit-policy")).toBe('"pro-orders-read-ip";q=2;w=10');
    const b = await fetch(`${server.url}/v1/forward-auth`, {
      method: "POST",
      // X-Real-IP, when present, names the client by default (a different X-Forwarded-For is ignored).
      headers: { "x-sluice-token": TOKEN, authorization: `Bearer ${FIXTURE_KEYS.big}`, "x-forwarded-for": "10.1.1.1", "x-real-ip": `::ffff:${ip}`, "x-original-method": "GET", "x-original-uri": "/v1/orders" },
    });
    expect(b.status).toBe(200);
    const c = await fetch(`${server.url}/v1/forward-auth`, { headers: { ...base, "x-forwarded-method": "GET", "x-forwarded-uri": "/v1/orders/7" } });
    expect(c.status).toBe(429);
    const body = (await c.json()) as { headers: Record<string, string>; reason: string };
    expect(body.reason).toBe("rate_limited");
    for (const [name, value] of Object.entries(body.headers)) expect(c.headers.get(name)).toBe(value);
    expect(c.headers.get("retry-after")).toBeTruthy();
    const noKey = await fetch(`${server.url}/v1/forward-auth`, { headers: { "x-sluice-token": TOKEN, "x-forwarded-method": "GET", "x-forwarded-uri": "/" } });
    expect(noKey.status).toBe(401);
    const noToken = await fetch(`${server.url}/v1/forward-auth`, { headers: { "x-api-key": FIXTURE_KEYS.big, "x-forwarded-method": "GET", "x-forwarded-uri": "/" } });
    expect(noToken.status).toBe(401);
  });

  it("client addresses: every spelling of one address shares one counter in /v1/check's ip and forward-auth's header; junk is one shared subject", async () => {
    // pro's orders-read ip limit: a token bucket of 2. The third request of one address is denied, whatever its spelling.
    const third = async (spellings: string[]) => {
      const out = [];
      for (const ip of spellings) {
        const body = (await (await check({ key: FIXTURE_KEYS.big, operation: "GET /v1/orders", ip, explain: true })).json()) as {
          reason: string;
          checks: { scope: string; key: string }[];
        };
        out.push({ reason: body.reason, key: body.checks.find((c) => c.scope === "ip")!.key });
      }
      return out;
    };
    const v4 = await third(["198.51.100.7", "::ffff:198.51.100.7", "::FFFF:c633:6407", "0:0:0:0:0:ffff:c633:6407"]);
    expect(v4.map((a) => a.reason)).toEqual(["ok", "ok", "rate_limited", "rate_limited"]);
    expect(new Set(v4.map((a) => a.key)).size).toBe(1);
    expect(v4[0]!.key.endsWith(":198.51.100.7")).toBe(true);
    const v6 = await third(["2001:DB8::1", "2001:db8:0:0::1", "2001:0db8:0000::0001"]);
    expect(v6.map((a) => a.reason)).toEqual(["ok", "ok", "rate_limited"]);
    expect(v6[0]!.key.endsWith(":2001:db8::1")).toBe(true);
    for (const ip of ["x", "", "198.51.100.7:80", "010.0.0.1", "999.1.1.1"]) {
      const res = await check({ key: FIXTURE_KEYS.big, operation: "GET /v1/orders", ip });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { field: string } }).error.field).toBe("ip");
    }
    // Forward-auth: unparseable or missing addresses share the one `unknown` counter, never "no IP limit".
    const fa = (xff?: string) =>
      fetch(`${server.url}/v1/forward-auth`, {
        headers: { "x-sluice-token": TOKEN, "x-api-key": FIXTURE_KEYS.big, "x-forwarded-method": "GET", "x-forwarded-uri": "/v1/orders/1", ...(xff === undefined ? {} : { "x-forwarded-for": xff }) },
      });
    const junk = [await fa("x"), await fa("garbage, unknown"), await fa()];
    expect(junk.map((r) => r.status)).toEqual([200, 200, 429]);
    // Spellings with ports and brackets, as proxies write them, are one address too.
    const spelled = [await fa("203.0.113.99:4711"), await fa("[::ffff:cb00:7163]:443"), await fa("10.0.0.1, ::FFFF:203.0.113.99")];
    expect(spelled.map((r) => r.status)).toEqual([200, 200, 429]);
  });

  it("forward-auth, Envoy's form: the request's own method and the path after /v1/forward-auth; headers win; bad forms are 400 or 404", async () => {
    const auth = { "x-sluice-token": TOKEN, "x-api-key": FIXTURE_KEYS.big };
    const envoy = await fetch(`${server.url}/v1/forward-auth/v1/orders/9?page=2`, { headers: auth });
    // big's limits are spent by the test above: allowed or denied, the decision is about GET /v1/orders/9.
    expect([200, 429]).toContain(envoy.status);
    expect(((await envoy.json()) as { operation: string; tenant: string })).toMatchObject({ operation: "orders-read", tenant: "big" });
    // X-Forwarded-* still decide when present, whatever the path says.
    const both = await fetch(`${server.url}/v1/forward-auth/v1/orders/9`, { headers: { ...auth, "x-forwarded-method": "DELETE", "x-forwarded-uri": "/v1/other" } });
    expect(((await both.json()) as { operation: string }).operation).toBe("*");
    const long = await fetch(`${server.url}/v1/forward-auth/${"a".repeat(600)}`, { headers: auth });
    expect(long.status).toBe(400);
    expect(((await long.json()) as { error: { field: string } }).error.field).toBe("X-Forwarded-Uri");
    const bare = await fetch(`${server.url}/v1/forward-auth?x=1`, { headers: auth });
    expect(bare.status).toBe(400);
    expect(((await bare.json()) as { error: { message: string } }).error.message).toMatch(/X-Forwarded-Method and X-Forwarded-Uri/);
    expect((await fetch(`${server.url}/v1/forward-authx/v1/orders`, { headers: auth })).status).toBe(404);
  });

  it("concurrency lease is released by POST /v1/release", async () => {
    const a = (await (await check({ key: FIXTURE_KEYS.conc, operation: "x" })).json()) as { leaseId: string; allowed: boolean };
    expect(a.allowed).toBe(true);
    expect((await (await check({ key: FIXTURE_KEYS.conc, operation: "x" })).json()) as object).toMatchObject({ reason: "concurrency_limited" });
    const rel = await fetch(`${server.url}/v1/release`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ leaseId: a.leaseId }),
    });
    expect(await rel.json()).toEqual({ released: true });
    expect(((await (await check({ key: FIXTURE_KEYS.conc, operation: "x" })).json()) as { allowed: boolean }).allowed).toBe(true);
  });

  it("service tokens: from SLUICE_SERVICE_TOKENS or the Redis set; anything else is 401", async () => {
    expect((await check({ tenant: "big", operation: "x" }, REDIS_TOKEN)).status).toBe(200);
    const wrong = await check({ tenant: "big", operation: "x" }, "nope");
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ error: { code: "unauthorized" } });
    const none = await fetch(`${server.url}/v1/check`, { method: "POST", body: "{}" });
    expect(none.status).toBe(401);
  });

  it("400 names the field; 413 over 64 KiB; 404 and 405", async () => {
    const cases: [unknown, string][] = [
      [{ key: "k", operation: "x", cost: 0 }, "cost"],
      [{ key: "k", operation: "x", cost: 1.5 }, "cost"],
      [{ key: "k", operation: "x", cost: "1" }, "cost"],
      [{ key: "k" }, "operation"],
      [{ operation: "x" }, "key"],
      [{ key: "k".repeat(513), operation: "x" }, "key"],
      [{ key: "k", operation: `GET /${"a".repeat(600)}` }, "operation"],
      [{ key: "k", operation: "x", ip: "not-an-ip" }, "ip"],
      [{ key: "k", operation: "x", dryRun: "yes" }, "dryRun"],
      [{ requests: [{ key: "k", operation: "x" }, { key: "k", operation: "x", cost: -1 }] }, "requests[1].cost"],
      [[1, 2], ""],
      // Unknown fields are refused by name: a typo must not silently consume (dry_run for dryRun).
      [{ key: "k", operation: "x", dry_run: true }, "dry_run"],
      [{ requests: [{ key: "k", operation: "x", costs: 2 }] }, "requests[0].costs"],
      [{ requests: [{ key: "k", operation: "x" }], dryRun: true }, "dryRun"],
    ];
    for (const [body, field] of cases) {
      const res = await check(body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      const json = (await res.json()) as { error: { code: string; message: string; field: string } };
      expect(json.error.code).toBe("invalid_request");
      expect(json.error.field).toBe(field);
      if (field) expect(json.error.message.startsWith(`${field}:`)).toBe(true);
    }
    const cost0 = (await (await check({ key: "k", operation: "x", cost: 0 })).json()) as { error: { message: string } };
    expect(cost0.error.message).toBe("cost: expected an integer ≥ 1");
    const bad = await check(null, TOKEN, "{not json");
    expect(bad.status).toBe(400);
    const big = await check(null, TOKEN, JSON.stringify({ key: "k", operation: "x", pad: "x".repeat(70_000) }));
    expect(big.status).toBe(413);
    for (const [path, body, field] of [
      ["/v1/release", { leaseId: "x", extra: 1 }, "extra"],
      ["/v1/settle", { reservationId: "rsv_x", actualCost: 1, actual_cost: 1 }, "actual_cost"],
    ] as const) {
      const res = await fetch(`${server.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(body) });
      expect(res.status, path).toBe(400);
      expect(await res.json()).toEqual({ error: { code: "invalid_request", message: `${field}: unknown field`, field } });
    }
    // Headers past node's limit: 431 in the one error envelope, never a bare socket close.
    const headers = await fetch(`${server.url}/v1/forward-auth`, { headers: { "x-sluice-token": TOKEN, "x-forwarded-uri": `/${"a".repeat(20_000)}` } });
    expect(headers.status).toBe(431);
    expect(await headers.json()).toEqual({ error: { code: "invalid_request", message: "request headers too large (over 16384 bytes or 100 lines)", field: null } });
    expect((await fetch(`${server.url}/v1/nothing`)).status).toBe(404);
    const m = await fetch(`${server.url}/v1/check`);
    expect(m.status).toBe(405);
    expect(await m.json()).toMatchObject({ error: { code: "method_not_allowed" } });
  });

  it("a revoked key stops working within 1 s (PUBLISH evicts the local cache)", async () => {
    expect(((await (await check({ key: FIXTURE_KEYS.acme2, operation: "x" })).json()) as { status: number }).status).toBe(200);
    await unindexApiKeys(redis, [sha256Hex(FIXTURE_KEYS.acme2)]);
    const started = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - started < 1_000) {
      status = ((await (await check({ key: FIXTURE_KEYS.acme2, operation: "x" })).json()) as { status: number }).status;
    }
    expect(status).toBe(401);
  });

  it("an invalid new document never replaces the last good one; a valid one does", async () => {
    await redis.set(keys.policyVersion(2), JSON.stringify({ version: 2, garbage: true }));
    await redis.set(keys.policyCurrent(), "2");
    await redis.publish(keys.policyChannel(), "2");
    await new Promise((r) => setTimeout(r, 400));
    const a = (await (await check({ tenant: "big", operation: "x" })).json()) as { policyVersion: number; allowed: boolean };
    expect(a).toMatchObject({ policyVersion: 1, allowed: true });
    expect(server.output()).toContain("policy v2 rejected");
    const file = fixturePolicyFile();
    await writeFixturePolicy(redis, compileFixture(file, 3));
    const deadline = Date.now() + 1_000;
    let version = 1;
    while (version !== 3 && Date.now() < deadline) {
      version = ((await (await check({ tenant: "big", operation: "x" })).json()) as { policyVersion: number }).policyVersion;
    }
    expect(version).toBe(3);
  });

  it("metrics: decisions by outcome/tier/operation, latency, breaker, policy version; never a key or IP label", async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toMatch(/sluice_decisions_total\{outcome="denied",tier="free",operation="orders-read"\} \d+/);
    // The denials again, by the answer's reason (a bounded label: the decision API's reasons).
    expect(text).toMatch(/sluice_denials_total\{reason="rate_limited",tier="free",operation="orders-read"\} \d+/);
    for (const m of text.matchAll(/sluice_denials_total\{reason="([^"]+)"/g)) expect(["rate_limited", "quota_exhausted", "concurrency_limited", "cost_exceeds_limit", "unknown_key", "tenant_suspended", "store_unavailable"]).toContain(m[1]);
    expect(text).toContain("sluice_decision_duration_seconds_bucket");
    expect(text).toContain("sluice_breaker_state 0");
    expect(text).toMatch(/sluice_policy_version 3/);
    expect(text).toContain('sluice_local_cache_hits_total{cache="key"}');
    expect(text).not.toContain("sk_test");
    expect(text).not.toContain("203.0.113.7");
    expect(text).not.toContain('tenant="');
  });

  it("usage: per-minute aggregates land in Redis within ~1 s, in the documented format", async () => {
    await new Promise((r) => setTimeout(r, 1_300));
    const minutes = await listUsageMinutes(redis);
    expect(minutes.length).toBeGreaterThan(0);
    let allowed = 0;
    let denied = 0;
    let latency = 0;
    for (const m of minutes) {
      const u = await readUsageMinute(redis, m);
      for (const d of u.decisions) {
        if (d.tenant === "acme" && d.operation === "orders-read" && d.outcome === "allowed") allowed += d.count;
        if (d.tenant === "acme" && d.operation === "orders-read" && d.outcome === "denied") denied += d.count;
      }
      latency += u.latency.allowed.reduce((a, b) => a + b, 0) + u.latency.denied.reduce((a, b) => a + b, 0);
      expect(await redis.ttl(keys.usageMinute(m))).toBeGreaterThan(86_400);
    }
    expect(allowed).toBe(5);
    expect(denied).toBe(1);
    expect(latency).toBeGreaterThan(10);
  });

  it("survives garbage (random bytes, huge numbers, wrong types, deep JSON) and keeps serving", async () => {
    const garbage: string[] = [
      randomBytes(2_000).toString("binary"),
      '{"key":"k","operation":"x","cost":1e308}',
      '{"key":"k","operation":"x","cost":99999999999999999999999}',
      '{"key":{"a":1},"operation":[1]}',
      "[".repeat(50_000) + "]".repeat(10_000),
      `{"requests":${"[".repeat(20_000)}}`,
      '{"__proto__":{"allowed":true},"key":"k","operation":"x"}',
      '{"constructor":{"prototype":{"x":1}},"tenant":"big","operation":"x"}',
      "null",
      "1",
      '""',
      "\u0000\u0001\u0002",
      '{"key":"\\ud800","operation":"x"}',
    ];
    for (let i = 0; i < 30; i++) garbage.push(randomBytes(1 + Math.floor(Math.random() * 500)).toString("latin1"));
    const t0 = performance.now();
    for (const body of garbage) {
      const res = await check(null, TOKEN, body);
      expect([200, 400, 413]).toContain(res.status);
      const text = await res.text();
      expect(text).not.toMatch(/at .*\.ts:\d+/);
    }
    console.log(`garbage bodies answered in ${(performance.now() - t0).toFixed(0)} ms`);
    // Raw broken HTTP on a socket: answered 400 and closed.
    const { Socket } = await import("node:net");
    const reply = await new Promise<string>((resolve) => {
      let data = "";
      const s = new Socket();
      s.setTimeout(8_000, () => s.destroy());
      s.on("data", (d: Buffer) => (data += d.toString()));
      s.on("close", () => resolve(data));
      s.on("error", () => resolve(data));
      s.connect(server.port, "127.0.0.1", () => s.end("GARBAGE / HTTP/9.9\r\n\x00\x01\r\n\r\n"));
    });
    expect(reply.startsWith("HTTP/1.1 400")).toBe(true);
    const ok = await check({ tenant: "big", operation: "x" });
    expect(ok.status).toBe(200);
    expect(server.child.exitCode).toBeNull();
  });

  it("SIGTERM drains in-flight requests and exits 0", async () => {
    const inFlight = Array.from({ length: 20 }, () => check({ tenant: "big", operation: "x" }).then((r) => r.status));
    inFlight.forEach((p) => p.catch(() => undefined));
    await new Promise((r) => setTimeout(r, 5));
    const code = await server.stop("SIGTERM");
    const statuses = await Promise.allSettled(inFlight);
    const answered = statuses.filter((s) => s.status === "fulfilled");
    for (const s of answered) expect(s.value).toBe(200);
    expect(answered.length).toBeGreaterThan(0);
    expect(code).toBe(0);
  });
});

describe("decision server whose output pipe closes", () => {
  it("drains and exits 0 instead of spinning on the failed log write (its supervisor died)", async () => {
    const orphan = await spawnDecisionServer({ REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: TOKEN, POLICY_POLL_MS: "200" }, { waitReady: true });
    const exited = new Promise<number | null>((resolve) => orphan.child.once("exit", resolve));
    // The reading ends go away, as when the process that read them is killed.
    orphan.child.stdout?.destroy();
    orphan.child.stderr?.destroy();
    // A new policy makes the server log a line, into the closed pipe.
    await writeFixturePolicy(redis, compileFixture(fixturePolicyFile(), 50));
    const code = await Promise.race([exited, new Promise<"still running">((r) => setTimeout(() => r("still running"), 10_000))]);
    if (code === "still running") await orphan.stop("SIGKILL");
    expect(code).toBe(0);
  });
});
