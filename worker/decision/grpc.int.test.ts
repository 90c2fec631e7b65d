/**
 * Envoy's rate limit service protocol spoken to real decision server processes (`npm run decision`,
 * spawned by lib/processes/harness.ts) over real gRPC, with a client built from the same Envoy
 * protos, against a redis-server of this file's own (so its command counts and outages are ours):
 * OK ×N then OVER_LIMIT with an honest duration_until_reset and the /v1/check headers,
 * hits_addend as the cost, one store call for all of a request's descriptors, decisions counted in
 * metrics and usage like HTTP ones, auth, bad input, health, a Redis outage answered per failure
 * mode within the 25 ms budget, and SIGTERM draining a call in flight.
 */
import * as grpc from "@grpc/grpc-js";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closedWaitMs } from "../../lib/decision/failure-path";
import { compileFixture, writeFixturePolicy } from "../../lib/decision/testing/fixture";
import { spawnDecisionServer, type SpawnedServer } from "../../lib/processes/harness";
import { type OwnRedis, startOwnRedis } from "../../lib/processes/redis-server";
import { keys } from "../../lib/redis/keys";
import { healthClient, rlsClient, type RlsDescriptorMessage, type RlsRequestMessage, type RlsResponseMessage } from "../../lib/rls/protos";
import { TIMING_METADATA } from "./grpc";

const TOKEN = "svc_grpc_test_0001";
const PREFIX = "grpc:";
const TIMEOUT_MS = 25;
const KEY = (name: string) => `sk_test_grpc_${name}_0001`;

const POLICY = compileFixture({
  version: 1,
  defaults: { failureMode: "open" },
  operations: [
    { name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] },
    { name: "export", match: ["POST /v1/exports"], failureMode: "closed" },
    { name: "search", match: ["GET /v1/search"], failureMode: "local" },
  ],
  tiers: [
    // Exact (a log): the N-th request passes, the N+1-th is denied, and the wait it names is the real one.
    { name: "edge", limits: [{ operation: "*", scope: "api_key", algorithm: "sliding_window_log", limit: 3, window: "1s" }] },
    { name: "budget", limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 5, window: "1h" }] },
    { name: "big", limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 1_000_000, window: "1m" }] },
  ],
  globalCaps: [],
  tenants: [
    { slug: "edge", name: "Edge", tier: "edge", keys: ["a", "a2", "a3", "b", "c"].map((n) => ({ name: n, key: KEY(n) })) },
    { slug: "budget", name: "Budget", tier: "budget", keys: ["d", "e", "f", "g"].map((n) => ({ name: n, key: KEY(n) })) },
    { slug: "counted", name: "Counted", tier: "big", keys: [{ name: "u", key: KEY("u") }] },
    { slug: "big", name: "Big", tier: "big", keys: [{ name: "big", key: KEY("big") }] },
    { slug: "sus", name: "Suspended", tier: "big", status: "suspended", keys: [{ name: "s", key: KEY("sus") }] },
  ],
});

let own: OwnRedis;
let redis: Redis;
/** Semantics: the harness's lenient store budget, so this loaded machine does not turn them into timeout tests. */
let server: SpawnedServer;
/** The product's 25 ms budget, for the outage; and descriptor tokens (SLUICE_RLS_DESCRIPTOR_TOKENS=1), for Contour. */
let fast: SpawnedServer;
let client: ReturnType<typeof rlsClient>;

const auth = (token = TOKEN, header = "authorization") => {
  const m = new grpc.Metadata();
  m.set(header, header === "authorization" ? `Bearer ${token}` : token);
  return m;
};
/** auth() asking for the server-timing trailer. */
const timed = () => {
  const m = auth();
  m.set(TIMING_METADATA, "1");
  return m;
};

interface Reply {
  response?: RlsResponseMessage;
  error?: grpc.ServiceError;
  /** The server's own decision time (the server-timing trailer). */
  serverMs: number;
  ms: number;
}

function call(c: ReturnType<typeof rlsClient>, request: RlsRequestMessage, metadata: grpc.Metadata = auth()): Promise<Reply> {
  const started = performance.now();
  return new Promise((resolve) => {
    let result: Pick<Reply, "response" | "error"> | null = null;
    let serverMs = NaN;
    let statusSeen = false;
    const finish = () => {
      if (result && statusSeen) resolve({ ...result, serverMs, ms: performance.now() - started });
    };
    const unary = c.ShouldRateLimit(request, metadata, { deadline: Date.now() + 5_000 }, (error, response) => {
      result = error ? { error } : { response };
      finish();
    });
    unary.on("status", (s: grpc.StatusObject) => {
      serverMs = Number(/dur=([0-9.]+)/.exec(String(s.metadata.get("server-timing")[0] ?? ""))?.[1] ?? NaN);
      statusSeen = true;
      finish();
    });
  });
}

const descriptor = (entries: Record<string, string>, extra: Partial<RlsDescriptorMessage> = {}): RlsDescriptorMessage => ({
  entries: Object.entries(entries).map(([key, value]) => ({ key, value })),
  ...extra,
});
const request = (descriptors: RlsDescriptorMessage[], extra: Partial<RlsRequestMessage> = {}): RlsRequestMessage => ({ domain: "sluice", descriptors, ...extra });
/** What the example's route actions produce for `GET /v1/orders/42` with X-Api-Key. */
const orders = (key: string, extra: Partial<RlsDescriptorMessage> = {}) =>
  descriptor({ api_key: key, remote_address: "203.0.113.7", method: "GET", path: "/v1/orders/42?expand=items" }, extra);
const headersOf = (r: RlsResponseMessage | undefined) => Object.fromEntries((r?.response_headers_to_add ?? []).map((h) => [h.key.toLowerCase(), h.value]));

async function metric(s: SpawnedServer, pattern: RegExp): Promise<number> {
  const text = await fetch(`${s.url}/metrics`).then((r) => r.text());
  return Number(pattern.exec(text)?.[1] ?? 0);
}

beforeAll(async () => {
  process.env.SLUICE_REDIS_PREFIX = PREFIX;
  own = await startOwnRedis();
  redis = new Redis(own.url, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  redis.on("error", () => undefined);
  await writeFixturePolicy(redis, POLICY);
  const env = { REDIS_URL: own.url, SLUICE_REDIS_PREFIX: PREFIX, SLUICE_SERVICE_TOKENS: TOKEN, POLICY_POLL_MS: "200", SLUICE_INSTANCES: "2" };
  [server, fast] = await Promise.all([
    spawnDecisionServer(env, { waitReady: true }),
    spawnDecisionServer({ ...env, REDIS_TIMEOUT_MS: String(TIMEOUT_MS), SLUICE_RLS_DESCRIPTOR_TOKENS: "1" }, { waitReady: true }),
  ]);
  client = rlsClient(server.grpcAddress);
}, 120_000);

afterAll(async () => {
  client?.close();
  await server?.stop();
  await fast?.stop();
  redis?.disconnect();
  await own?.stop();
});

describe("Envoy RLS over gRPC (real decision server)", () => {
  it("answers OK ×3 then OVER_LIMIT with the limit, an honest duration_until_reset and the /v1/check headers; after that wait it passes", async () => {
    // Four calls inside one second, each decided by the store. On a loaded machine an attempt may
    // prove nothing: the calls took over 800 ms (the 1 s window slid past the first), or a call
    // missed the 25 ms store budget and was answered by the failure mode (OK, no limit). Such an
    // attempt is made again with a fresh key; the assertions below hold the last attempt.
    type Answer = Awaited<ReturnType<typeof call>>;
    let key = "";
    let answers: Answer[] = [];
    for (const attempt of ["a", "a2", "a3"]) {
      key = attempt;
      const startedMs = performance.now();
      answers = [];
      for (let i = 0; i < 4; i++) answers.push(await call(client, request([orders(KEY(key))])));
      const decided = answers.every((a) => a.response?.statuses[0]?.current_limit);
      if (decided && performance.now() - startedMs <= 800) break;
    }
    for (let i = 0; i < 3; i++) {
      const { response: ok, error } = answers[i]!;
      expect(error).toBeUndefined();
      expect(ok).toMatchObject({
        overall_code: "OK",
        statuses: [{ code: "OK", current_limit: { name: "edge-api_key", requests_per_unit: 3, unit: "SECOND" }, limit_remaining: 2 - i }],
      });
      expect(headersOf(ok)).toMatchObject({ "ratelimit-limit": "3", "ratelimit-remaining": String(2 - i), "ratelimit-policy": '"edge-api_key";q=3;w=1' });
    }
    const { response } = answers[3]!;
    expect(response?.overall_code).toBe("OVER_LIMIT");
    const status = response!.statuses[0]!;
    expect(status).toMatchObject({ code: "OVER_LIMIT", limit_remaining: 0 });
    const waitS = Number(status.duration_until_reset?.seconds);
    expect(waitS).toBe(1);
    const headers = headersOf(response);
    expect(headers).toMatchObject({ "retry-after": String(waitS), "ratelimit-reset": String(waitS), ratelimit: `"edge-api_key";r=0;t=${waitS}`, "x-sluice-reason": "rate_limited" });

    // The same headers /v1/check gives for the same state (another key of the tenant, same limit).
    for (let i = 0; i < 3; i++) await call(client, request([orders(KEY("b"))]));
    const http = await fetch(`${server.url}/v1/check`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ key: KEY("b"), operation: "GET /v1/orders/42", ip: "203.0.113.7" }),
    }).then((r) => r.json() as Promise<{ headers: Record<string, string> }>);
    expect(Object.keys(headers).filter((h) => h !== "x-sluice-reason").sort()).toEqual(Object.keys(http.headers).map((h) => h.toLowerCase()).sort());

    await new Promise((r) => setTimeout(r, waitS * 1000));
    expect((await call(client, request([orders(KEY(key))]))).response?.overall_code).toBe("OK");
  });

  it("takes the descriptor's hits_addend, else the request's, as the cost; a denied one consumes nothing", async () => {
    const d = (hits?: number) => orders(KEY("d"), hits === undefined ? {} : { hits_addend: { value: hits } });
    expect((await call(client, request([d(4)]))).response?.statuses[0]).toMatchObject({ code: "OK", limit_remaining: 1 });
    expect((await call(client, request([d(2)]))).response?.statuses[0]).toMatchObject({ code: "OVER_LIMIT" });
    // The request's hits_addend applies where the descriptor has none; 0 means the operation's cost, 1.
    expect((await call(client, request([d()], { hits_addend: 2 }))).response?.statuses[0]).toMatchObject({ code: "OVER_LIMIT" });
    expect((await call(client, request([d()], { hits_addend: 0 }))).response?.statuses[0]).toMatchObject({ code: "OK", limit_remaining: 0 });
    const e = (await call(client, request([orders(KEY("e"))], { hits_addend: 5 }))).response;
    expect(e?.statuses[0]).toMatchObject({ code: "OK", limit_remaining: 0 });
  });

  it("decides all of a request's descriptors in one store call, each as its own decision", async () => {
    const many = Array.from({ length: 10 }, () => orders(KEY("big")));
    await call(client, request(many)); // key lookups cached
    await redis.config("RESETSTAT");
    const { response } = await call(client, request(many));
    expect(response?.statuses).toHaveLength(10);
    expect(response?.statuses.map((s) => s.code)).toEqual(Array(10).fill("OK"));
    expect(response!.statuses[9]!.limit_remaining).toBe(response!.statuses[0]!.limit_remaining - 9);
    // One DECIDE call (a Redis Function) for the ten; the usage flush, a script, is not one.
    const info = await redis.info("commandstats");
    expect(Number(/cmdstat_fcall:calls=(\d+)/.exec(info)?.[1] ?? 0)).toBe(1);
  });

  it("counts gRPC decisions in metrics and usage exactly like HTTP ones", async () => {
    const allowed = /^sluice_decisions_total\{outcome="allowed",tier="big",operation="orders-read"\} (\d+)/m;
    const before = await metric(server, allowed);
    for (let i = 0; i < 4; i++) await call(client, request([orders(KEY("u")), orders(KEY("u"))]));
    expect((await metric(server, allowed)) - before).toBe(8);
    expect(await metric(server, /^sluice_rls_calls_total\{grpc_code="OK",overall_code="OK"\} (\d+)/m)).toBeGreaterThanOrEqual(4);
    // The usage aggregates the dashboards and billing read (flushed every second).
    let used = 0;
    for (let attempt = 0; attempt < 40 && used < 8; attempt++) {
      await new Promise((r) => setTimeout(r, 100));
      used = 0;
      for (const minute of await redis.smembers(keys.usageMinutes())) {
        used += Number((await redis.hget(keys.usageMinute(Number(minute)), "d|counted|big|orders-read|allowed")) ?? 0);
      }
    }
    expect(used).toBe(8);
  });

  it("answers unknown keys, suspended tenants and a keyless descriptor OVER_LIMIT, with the reason", async () => {
    const cases: [RlsDescriptorMessage, string][] = [
      [orders("sk_nobody"), "unknown_key"],
      [orders(KEY("sus")), "tenant_suspended"],
      [descriptor({ remote_address: "203.0.113.7", method: "GET", path: "/v1/orders" }), "unknown_key"],
      [descriptor({ api_key: "", method: "GET", path: "/v1/orders" }), "unknown_key"],
    ];
    for (const [d, reason] of cases) {
      const { response, error } = await call(client, request([d]));
      expect(error).toBeUndefined();
      expect(response?.overall_code).toBe("OVER_LIMIT");
      expect(headersOf(response)["x-sluice-reason"]).toBe(reason);
      expect(headersOf(response)["retry-after"]).toBeUndefined();
    }
  });

  it("refuses a missing or wrong service token with UNAUTHENTICATED; accepts Bearer and x-sluice-token", async () => {
    expect((await call(client, request([orders(KEY("big"))]), new grpc.Metadata())).error?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await call(client, request([orders(KEY("big"))]), auth("wrong"))).error?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await call(client, request([orders(KEY("big"))]), auth("wrong", "x-sluice-token"))).error?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await call(client, request([orders(KEY("big"))]), auth(TOKEN, "x-sluice-token"))).response?.overall_code).toBe("OK");
    // Without metadata (Contour): a sluice_token entry in every descriptor, only where
    // SLUICE_RLS_DESCRIPTOR_TOKENS=1 (the `fast` server); by default the headers alone decide.
    const carrying = (token: string) => orders(KEY("big"), { entries: [...orders(KEY("big")).entries!, { key: "sluice_token", value: token }] });
    expect((await call(client, request([carrying(TOKEN), carrying(TOKEN)]), new grpc.Metadata())).error?.code).toBe(grpc.status.UNAUTHENTICATED);
    const contour = rlsClient(fast.grpcAddress);
    try {
      expect((await call(contour, request([carrying(TOKEN), carrying(TOKEN)]), new grpc.Metadata())).response?.overall_code).toBe("OK");
      expect((await call(contour, request([carrying(TOKEN), orders(KEY("big"))]), new grpc.Metadata())).error?.code).toBe(grpc.status.UNAUTHENTICATED);
      expect((await call(contour, request([carrying("wrong")]), new grpc.Metadata())).error?.code).toBe(grpc.status.UNAUTHENTICATED);
      // A wrong token in the metadata is refused even with a right one in the descriptors.
      expect((await call(contour, request([carrying(TOKEN)]), auth("wrong"))).error?.code).toBe(grpc.status.UNAUTHENTICATED);
    } finally {
      contour.close();
    }
  });

  it("refuses bad input with INVALID_ARGUMENT naming the field, or RESOURCE_EXHAUSTED for size, and keeps serving", async () => {
    const invalid: [RlsRequestMessage, RegExp][] = [
      [request([]), /^descriptors: /],
      [{ descriptors: [orders(KEY("big"))] }, /^domain: /],
      [request([descriptor({})]), /^descriptors\[0\]\.entries: /],
      [request([{ entries: [{ key: "", value: "" }] }]), /^descriptors\[0\]\.entries\[0\]\.key: /],
      [request([descriptor({ api_key: KEY("big") })]), /^descriptors\[0\]: an operation is required/],
      [request(Array.from({ length: 101 }, () => orders(KEY("big")))), /^descriptors: at most 100/],
    ];
    for (const [message, details] of invalid) {
      const { error } = await call(client, message);
      expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(error?.details).toMatch(details);
    }
    // Any other domain is the policy's rateLimitService's: one it does not know answers OK, as envoyproxy/ratelimit does.
    expect((await call(client, request([orders(KEY("big"))], { domain: "envoy" }))).response).toMatchObject({ overall_code: "OK", statuses: [{ code: "OK" }] });
    const huge = await call(client, request([descriptor({ api_key: "k".repeat(70 * 1024), operation: "export" })]));
    expect(huge.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    // Bytes that are no RateLimitRequest at all.
    const raw = new grpc.Client(server.grpcAddress, grpc.credentials.createInsecure());
    const garbage = await new Promise<grpc.ServiceError | null>((resolve) =>
      raw.makeUnaryRequest(
        "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit",
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from([0xff, 0xff, 0xff, 0xff]),
        auth(),
        (error) => resolve(error),
      ),
    );
    raw.close();
    expect(garbage?.code).not.toBe(grpc.status.OK);
    expect(server.child.exitCode).toBeNull();
    expect((await call(client, request([orders(KEY("big"))]))).response?.overall_code).toBe("OK");
  });

  it("sends the server-timing trailer only to a call that asks for it (x-sluice-server-timing)", async () => {
    const d = descriptor({ api_key: KEY("big"), method: "GET", path: "/v1/orders" });
    const plain = await call(client, request([d]));
    const asked = await call(client, request([d]), timed());
    expect(plain.response?.overall_code).toBe("OK");
    expect(plain.serverMs).toBeNaN();
    expect(asked.response?.overall_code).toBe("OK");
    expect(asked.serverMs).toBeGreaterThanOrEqual(0);
    expect(asked.serverMs).toBeLessThan(asked.ms);
  });

  it("answers grpc.health.v1.Health/Check SERVING, and NOT_FOUND for another service", async () => {
    const health = healthClient(server.grpcAddress);
    const check = (service: string) =>
      new Promise<{ status?: string; code?: number }>((resolve) =>
        health.Check({ service }, { deadline: Date.now() + 5_000 }, (error, response) => resolve(error ? { code: error.code } : { status: response?.status })),
      );
    expect(await check("")).toEqual({ status: "SERVING" });
    expect(await check("envoy.service.ratelimit.v3.RateLimitService")).toEqual({ status: "SERVING" });
    expect(await check("some.Other")).toEqual({ code: grpc.status.NOT_FOUND });
    health.close();
  });

  it("answers a Redis outage per failure mode within the 25 ms budget: open OK, closed OVER_LIMIT store_unavailable, local OK", async () => {
    const c = rlsClient(fast.grpcAddress);
    const ops = {
      open: orders(KEY("big")),
      closed: descriptor({ api_key: KEY("big"), method: "POST", path: "/v1/exports" }),
      local: descriptor({ api_key: KEY("big"), method: "GET", path: "/v1/search" }),
    };
    for (let i = 0; i < 30; i++) await call(c, request([Object.values(ops)[i % 3]!])); // warm up
    for (const r of await Promise.all(Object.values(ops).map((d) => call(c, request([d]))))) expect(r.response?.overall_code).toBe("OK");
    const pid = own.pid()!;
    const results: { how: string; op: string; reply: Reply }[] = [];
    for (const how of ["hung (SIGSTOP)", "killed"]) {
      if (how === "killed") {
        process.kill(pid, "SIGCONT");
        await own.kill();
      } else process.kill(pid, "SIGSTOP");
      try {
        // Enough answers that the p99 below is not just the slowest two (a starved event loop fires
        // even a 25 ms timer late now and then on this shared machine).
        for (let i = 0; i < 80; i++) {
          for (const [op, d] of Object.entries(ops)) results.push({ how, op, reply: await call(c, request([d]), timed()) });
        }
      } finally {
        if (how !== "killed") process.kill(pid, "SIGCONT");
      }
    }
    await own.start();
    await writeFixturePolicy(redis, POLICY).catch(async () => {
      await new Promise((r) => setTimeout(r, 300));
      await writeFixturePolicy(redis, POLICY);
    });
    c.close();

    for (const { op, reply } of results) {
      expect(reply.error).toBeUndefined();
      if (op === "closed") {
        expect(reply.response?.overall_code).toBe("OVER_LIMIT");
        expect(headersOf(reply.response)["x-sluice-reason"]).toBe("store_unavailable");
      } else {
        expect(reply.response?.overall_code).toBe("OK");
      }
    }
    const client = results.map((r) => r.reply.ms).sort((a, b) => a - b);
    const p99 = (xs: number[]) => xs[Math.floor(xs.length * 0.99)]!;
    const serverMs = (ops: string[]) =>
      results
        .filter((r) => ops.includes(r.op))
        .map((r) => r.reply.serverMs)
        .sort((a, b) => a - b);
    const [fastOps, closedOps] = [serverMs(["open", "local"]), serverMs(["closed"])];
    console.log(
      `outage: open+local n=${fastOps.length} server p50 ${fastOps[fastOps.length >> 1]!.toFixed(2)} p99 ${p99(fastOps).toFixed(2)} max ${fastOps[fastOps.length - 1]!.toFixed(2)} ms; closed p99 ${p99(closedOps).toFixed(2)} max ${closedOps[closedOps.length - 1]!.toFixed(2)} ms; client p50 ${client[client.length >> 1]!.toFixed(1)} max ${client[client.length - 1]!.toFixed(1)} ms`,
    );
    // Judged by the server's own timing, like failure-modes.int.test.ts: this machine's cores are
    // shared. Each operation within its own wait: the budget, or for a fail-closed one the longer
    // wait before its 503 (docs/failure-modes.md: it gains nothing from giving up early).
    // The fail-closed ones are 160 answers, so their p99 is the second slowest: on CI, with the
    // whole integration suite beside it, two late timers made it 207 ms. Their p95 is held to the
    // wait, and none may come near waiting for the store (it never answers here).
    expect(p99(fastOps)).toBeLessThanOrEqual(TIMEOUT_MS + 10);
    expect(closedOps[Math.floor(closedOps.length * 0.95)]!).toBeLessThanOrEqual(closedWaitMs(TIMEOUT_MS) + 10);
    expect(closedOps[closedOps.length - 1]!).toBeLessThan(1_000);
  }, 60_000);

  it("SIGTERM drains a gRPC call in flight, answers it, and exits 0", async () => {
    const slow = await startOwnRedis();
    const slowRedis = new Redis(slow.url);
    await writeFixturePolicy(slowRedis, POLICY);
    slowRedis.disconnect();
    const s = await spawnDecisionServer({ REDIS_URL: slow.url, SLUICE_REDIS_PREFIX: PREFIX, SLUICE_SERVICE_TOKENS: TOKEN, REDIS_TIMEOUT_MS: "1500" }, { waitReady: true });
    const c = rlsClient(s.grpcAddress);
    try {
      await call(c, request([orders(KEY("big"))]));
      process.kill(slow.pid()!, "SIGSTOP");
      // A new key: its lookup waits for the hung Redis until the 1.5 s budget runs out.
      const inFlight = call(c, request([orders(KEY("f"))]));
      await new Promise((r) => setTimeout(r, 300));
      const exited = s.stop("SIGTERM");
      const reply = await inFlight;
      expect(reply.error).toBeUndefined();
      expect(reply.response?.overall_code).toBe("OK");
      process.kill(slow.pid()!, "SIGCONT");
      expect(await exited).toBe(0);
    } finally {
      c.close();
      const pid = slow.pid();
      if (pid) process.kill(pid, "SIGCONT");
      await s.stop("SIGKILL");
      await slow.stop();
    }
  }, 60_000);
});
