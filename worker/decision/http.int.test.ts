/**
 * Hostile HTTP clients (issue #30) against real decision servers, one on each HTTP server
 * (SLUICE_HTTP_SERVER=http1, the default, and node), with real Redis and the SLUICE_HTTP_* limits
 * set low: forged forward-auth operations, a hidden request past the header-line limit, a second
 * answer to one request, duplicate JSON keys, a pipelining client that stops reading, and empty
 * lines on an idle connection. lib/net/http-server.test.ts holds both servers to the rest.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { spawnDecisionServer, type SpawnedServer } from "../../lib/processes/harness";
import { compileFixture, FIXTURE_KEYS, writeFixturePolicy } from "../../lib/decision/testing/fixture";
import { HTTP_SERVERS } from "../../lib/net/http-server";
import { connect, exchange, parseReplies, sleep, statuses } from "../../lib/net/testing/raw-http";

const TOKEN = "svc_http_hostile_0001";

let redis: Redis;
beforeAll(() => {
  redis = new Redis(testRedisUrl());
});
afterAll(() => redis?.disconnect());

describe.each(HTTP_SERVERS)("a decision server on SLUICE_HTTP_SERVER=%s", (kind) => {
  let server: SpawnedServer;
  const check = (body: string, extraHeaders = "") =>
    `POST /v1/check HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n${extraHeaders}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const post = async (path: string, body: string) => {
    const res = await fetch(`${server.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` }, body, signal: AbortSignal.timeout(10_000) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    const prefix = `${testRedisPrefix()}h${kind === "node" ? "n" : "1"}${randomBytes(2).toString("hex")}:`;
    process.env.SLUICE_REDIS_PREFIX = prefix;
    await writeFixturePolicy(redis, compileFixture());
    server = await spawnDecisionServer(
      {
        REDIS_URL: testRedisUrl(),
        SLUICE_REDIS_PREFIX: prefix,
        SLUICE_SERVICE_TOKENS: TOKEN,
        SLUICE_HTTP_SERVER: kind,
        SLUICE_HTTP_MAX_HEADERS: "30",
        SLUICE_HTTP_HEADERS_TIMEOUT_MS: "1000",
        SLUICE_HTTP_REQUEST_TIMEOUT_MS: "2000",
        SLUICE_HTTP_KEEP_ALIVE_TIMEOUT_MS: "1000",
      },
      { waitReady: true },
    );
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("names its HTTP server in the start-up line", () => {
    const line = server.output().split("\n").find((l) => l.includes("decision server listening"));
    expect(line).toContain(kind === "node" ? "HTTP on node:http" : "HTTP on http1");
    expect(line).toContain(`"httpServer":"${kind}"`);
  });

  it("forward-auth: when X-Original-Method / X-Original-URI are present, X-Forwarded-Method / -Uri are the client's word and ignored", async () => {
    const res = await fetch(`${server.url}/v1/forward-auth`, {
      headers: {
        "x-sluice-token": TOKEN,
        "x-api-key": FIXTURE_KEYS.big,
        "x-original-method": "POST",
        "x-original-uri": "/v1/exports",
        "x-forwarded-method": "GET",
        "x-forwarded-uri": "/v1/orders",
      },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ operation: "export" });
    // Half a pair is no pair: the other half is not taken from X-Forwarded-*.
    const half = await fetch(`${server.url}/v1/forward-auth`, { headers: { "x-sluice-token": TOKEN, "x-api-key": FIXTURE_KEYS.big, "x-original-method": "GET", "x-forwarded-uri": "/v1/orders" } });
    expect(half.status).toBe(400);
  });

  it("more header lines than SLUICE_HTTP_MAX_HEADERS is a 431; the body they frame is never read as a hidden /v1/check", async () => {
    const remaining = async () => (await post("/v1/check", JSON.stringify({ key: FIXTURE_KEYS.quota, operation: "GET /v1/orders", dryRun: true }))).body.remaining;
    const before = await remaining();
    const hidden = check(JSON.stringify({ key: FIXTURE_KEYS.quota, operation: "GET /v1/orders" }));
    const smuggler = `POST /healthz HTTP/1.1\r\nHost: t\r\n${"X-F: 1\r\n".repeat(29)}Content-Length: ${hidden.length}\r\n\r\n${hidden}`;
    const { text, closed } = await exchange(server.port, [smuggler]);
    expect(statuses(text)).toEqual([431]);
    expect(closed).toBe(true);
    expect(JSON.parse(parseReplies(text)[0]!.body)).toMatchObject({ error: { code: "invalid_request" } });
    expect(await remaining()).toBe(before);
  });

  it("one answer per request: a 401 from the head whose skipped body then breaks gets no second status line", async () => {
    const { text, closed } = await exchange(server.port, ["POST /v1/check HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", "zz\r\n"], { pauseMs: 20 });
    expect(statuses(text)).toEqual([401]);
    expect(closed).toBe(true);
    // …nor when the body never comes: the request timeout closes it without a 408.
    const slow = await exchange(server.port, ["POST /v1/check HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nab"], { settleMs: 5_000 });
    expect(statuses(slow.text)).toEqual([401]);
    expect(slow.closed).toBe(true);
  });

  it("a JSON body with a duplicate key is a 400 naming it (the first copy is what a WAF in front would have read)", async () => {
    const cases: [string, string, string][] = [
      ["/v1/check", `{"key":"${FIXTURE_KEYS.big}","operation":"GET /v1/orders","cost":1000000000,"cost":1}`, "cost"],
      ["/v1/check", `{"requests":[{"key":"k","operation":"x"},{"key":"k","operation":"x","dryRun":true,"dryRun":false}]}`, "requests[1].dryRun"],
      ["/v1/check", `{"key":"k","operation":"x","\\u0063ost":2,"cost":1}`, "cost"],
      ["/v1/release", `{"leaseId":"a","leaseId":"b"}`, "leaseId"],
      ["/v1/settle", `{"reservationId":"rsv_x","actualCost":1,"actualCost":2}`, "actualCost"],
    ];
    for (const [path, body, field] of cases) {
      const res = await post(path, body);
      expect(res, body).toEqual({ status: 400, body: { error: { code: "invalid_request", message: `${field}: duplicate key`, field } } });
    }
    // Colons inside strings (an IPv6 address) are no duplicate.
    const v6 = await post("/v1/check", JSON.stringify({ key: FIXTURE_KEYS.big, operation: "GET /v1/search", ip: "2001:db8::1" }));
    expect(v6.status).toBe(200);
  });

  it("a client that pipelines and stops reading past every timeout gets every answer once it reads again", async () => {
    // /openapi.json is large enough that a few hundred answers fill every socket buffer on the way.
    const n = 600;
    const socket = await connect(server.port);
    socket.pause();
    socket.write("GET /openapi.json HTTP/1.1\r\nHost: t\r\n\r\n".repeat(n));
    await sleep(3_000);
    let text = "";
    socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
    socket.resume();
    const deadline = Date.now() + 20_000;
    while (parseReplies(text).length < n && Date.now() < deadline) await sleep(100);
    socket.destroy();
    const replies = parseReplies(text);
    expect(replies.length).toBe(n);
    expect(replies.every((r) => r.status === 200)).toBe(true);
  });

  it.skipIf(kind === "node")("closes an idle connection after the keep-alive timeout however many empty lines it sends (node:http's timer restarts on any byte)", async () => {
    const socket = await connect(server.port);
    let closed = false;
    socket.on("close", () => (closed = true));
    socket.write("GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    await new Promise((resolve) => socket.once("data", resolve));
    const started = Date.now();
    while (!closed && Date.now() - started < 6_000) {
      socket.write("\r\n");
      await sleep(300);
    }
    expect(closed).toBe(true);
    // 1 s of keep-alive, judged once a second.
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});
