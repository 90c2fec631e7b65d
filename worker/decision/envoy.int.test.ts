/**
 * The policy's `rateLimitService` domains on a real decision server (in this process) over real
 * gRPC, against a redis-server of this file's own (its command counts and its outage are ours):
 * one script call per ShouldRateLimit whatever the number of descriptors, hash-tagged keys that
 * expire with their window, Sluice's algorithms on a rule, unknown domains as theirs (or refused
 * when the section says so), and each rule's failure mode when Redis cannot answer.
 */
import * as grpc from "@grpc/grpc-js";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix } from "../../test/helpers";
import { compileFixture, writeFixturePolicy } from "../../lib/decision/testing/fixture";
import { createLogger } from "../../lib/log";
import { freePort } from "../../lib/net/ports";
import { type OwnRedis, startOwnRedis } from "../../lib/processes/redis-server";
import type { PolicyFileInput } from "../../lib/policy/policy-file";
import { keys } from "../../lib/redis/keys";
import { parseUsageHash, type UsageMinute } from "../../lib/redis/usage-format";
import { rlsClient, type RlsRequestMessage, type RlsResponseMessage } from "../../lib/rls/protos";
import { startDecisionServer, type DecisionServer } from "./server";

const TOKEN = "svc_envoy_int_0001";
const BUDGET_MS = 150;

function policy(version: number, unknownDomain: "ok" | "error" = "ok") {
  const file = {
    version: 1,
    defaults: { failureMode: "open" },
    operations: [],
    tiers: [],
    globalCaps: [],
    tenants: [],
    rateLimitService: {
      unknownDomain,
      domains: [
        {
          domain: "edge",
          descriptors: [
            { key: "open", rate_limit: { unit: "hour", requests_per_unit: 2 } },
            { key: "closed", rate_limit: { unit: "hour", requests_per_unit: 2, failureMode: "closed" } },
            { key: "local", rate_limit: { unit: "hour", requests_per_unit: 2, failureMode: "local" } },
            { key: "sliding", rate_limit: { unit: "minute", requests_per_unit: 2, algorithm: "sliding_window_counter" } },
            { key: "named", rate_limit: { name: "per-named", unit: "hour", requests_per_unit: 1 } },
            { key: "window", rate_limit: { window: "90s", requests_per_unit: 1, algorithm: "fixed_window" } },
            { key: "daily", rate_limit: { period: "day", requests_per_unit: 2 } },
          ],
        },
      ],
    },
  } as unknown as PolicyFileInput;
  return compileFixture(file, version);
}

let own: OwnRedis;
let redis: Redis;
let server: DecisionServer;
let client: ReturnType<typeof rlsClient>;

beforeAll(async () => {
  own = await startOwnRedis();
  redis = new Redis(own.url);
  await writeFixturePolicy(redis, policy(1));
  server = await startDecisionServer({
    port: 0,
    host: "127.0.0.1",
    grpcPort: await freePort(),
    redisUrl: own.url,
    redisTimeoutMs: BUDGET_MS,
    pollMs: 100,
    instances: 1,
    serviceTokens: [TOKEN],
    logger: createLogger("decision", { level: "error" }),
  });
  client = rlsClient(`127.0.0.1:${server.grpcPort}`);
});

afterAll(async () => {
  client?.close();
  await server?.close();
  redis?.disconnect();
  await own?.stop();
});

type Reply = { response?: RlsResponseMessage; error?: grpc.ServiceError };
function call(request: RlsRequestMessage): Promise<Reply> {
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${TOKEN}`);
  return new Promise((resolve) => {
    client.ShouldRateLimit(request, metadata, { deadline: Date.now() + 10_000 }, (error, response) => resolve(error ? { error } : { response }));
  });
}
const edge = (...descriptors: [string, string][]): RlsRequestMessage => ({ domain: "edge", descriptors: descriptors.map(([key, value]) => ({ entries: [{ key, value }] })) });

describe("rateLimitService domains on the decision server", () => {
  it("counts every descriptor of a call in one script call, under hash-tagged keys that expire with their window", async () => {
    await call(edge(["open", "warm"])); // loads the script
    await redis.config("RESETSTAT");
    const r = await call(edge(["open", "a"], ["closed", "a"], ["local", "a"]));
    expect(r.response?.overall_code).toBe("OK");
    expect(r.response?.statuses?.map((s) => [s.code, s.limit_remaining, s.current_limit?.unit])).toEqual([
      ["OK", 1, "HOUR"],
      ["OK", 1, "HOUR"],
      ["OK", 1, "HOUR"],
    ]);
    const stats = await redis.info("commandstats");
    expect(Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0)).toBe(1);
    expect(/cmdstat_(eval|fcall):/.test(stats)).toBe(false);

    const keys = (await redis.keys(`${testRedisPrefix()}{e:*`)).filter((k) => k.includes(":a}"));
    expect(keys).toHaveLength(3);
    const hourStart = Math.floor(Date.now() / 3_600_000) * 3_600;
    for (const key of keys) {
      // The hash tag is the whole counter (domain's rule and values); the window start follows it.
      expect(key).toMatch(new RegExp(`^${testRedisPrefix()}\\{e:[0-9a-f]{16}:a\\}:(${hourStart}|${hourStart + 3_600})$`));
      const ttl = await redis.ttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(3_601);
    }
  });

  it("counts a rule that names a Sluice algorithm with that algorithm (a denied request consumes nothing)", async () => {
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await call(edge(["sliding", "s"]))).response);
    expect(answers.map((a) => a?.statuses?.[0]?.code)).toEqual(["OK", "OK", "OVER_LIMIT", "OVER_LIMIT"]);
    expect(answers[3]?.overall_code).toBe("OVER_LIMIT");
    expect(answers[0]?.statuses?.[0]?.current_limit).toMatchObject({ requests_per_unit: 2, unit: "MINUTE" });
    expect(Number(answers[3]?.statuses?.[0]?.duration_until_reset?.seconds ?? 0)).toBeGreaterThan(0);
  });

  it("counts a rule with Sluice's window or calendar period: the unit it reports, the seconds to its end", async () => {
    const windowed = [await call(edge(["window", "w"])), await call(edge(["window", "w"]))].map((r) => r.response?.statuses?.[0]);
    expect(windowed.map((s) => s?.code)).toEqual(["OK", "OVER_LIMIT"]);
    expect(windowed[0]?.current_limit).toMatchObject({ requests_per_unit: 1, unit: "UNKNOWN" });
    expect(Number(windowed[1]?.duration_until_reset?.seconds)).toBeLessThanOrEqual(90);

    const daily = [];
    for (let i = 0; i < 3; i++) daily.push((await call(edge(["daily", "d"]))).response?.statuses?.[0]);
    expect(daily.map((s) => [s?.code, s?.limit_remaining ?? 0])).toEqual([
      ["OK", 1],
      ["OK", 0],
      ["OVER_LIMIT", 0],
    ]);
    expect(daily[0]?.current_limit).toMatchObject({ requests_per_unit: 2, unit: "DAY" });
    const toMidnight = Math.ceil((Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1) - Date.now()) / 1000);
    expect(Math.abs(Number(daily[2]?.duration_until_reset?.seconds) - toMidnight)).toBeLessThanOrEqual(5);
  });

  it("answers a domain the policy does not know OK, as theirs; with unknownDomain: error, refuses it naming the domain", async () => {
    const unknown: RlsRequestMessage = { domain: "nobody", descriptors: [{ entries: [{ key: "k", value: "v" }] }] };
    expect((await call(unknown)).response).toMatchObject({ overall_code: "OK", statuses: [{ code: "OK" }] });
    await writeFixturePolicy(redis, policy(2, "error"));
    await until(() => server.policy.current?.version === 2);
    const refused = await call(unknown);
    expect(refused.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(refused.error?.details).toBe('domain: unknown domain "nobody"');
    // The known domain keeps its counters across the publish (the rule ids did not change).
    expect((await call(edge(["open", "a"]))).response?.statuses?.[0]?.limit_remaining).toBe(0);
  });

  it("answers POST /json with the request and response as protobuf JSON, 429 when over the limit, the service token as on /v1/check", async () => {
    const post = (body: unknown, token: string | null = TOKEN) =>
      fetch(`http://127.0.0.1:${server.port}/json`, { method: "POST", headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
    const request = { domain: "edge", descriptors: [{ entries: [{ key: "open", value: "json" }] }, { entries: [{ key: "unknown", value: "x" }] }] };
    const first = await post(request);
    expect(first.status).toBe(200);
    const hourEnd = (Math.floor(Date.now() / 3_600_000) + 1) * 3_600;
    const body = (await first.json()) as { statuses: { durationUntilReset: string }[] };
    expect(body).toEqual({
      overallCode: "OK",
      // Zero values left out, as protobuf JSON writes them: the second status is `code: OK`, 0 remaining, no limit.
      statuses: [{ code: "OK", currentLimit: { requestsPerUnit: 2, unit: "HOUR" }, limitRemaining: 1, durationUntilReset: expect.stringMatching(/^\d+s$/) }, { code: "OK" }],
    });
    expect(Math.abs(Number.parseInt(body.statuses[0]!.durationUntilReset, 10) - (hourEnd - Math.floor(Date.now() / 1000)))).toBeLessThanOrEqual(2);
    // The proto names work too (hits_addend), and the third unit of 2 is over.
    const over = await post({ domain: "edge", hits_addend: 2, descriptors: [{ entries: [{ key: "open", value: "json" }] }] });
    expect(over.status).toBe(429);
    expect(await over.json()).toMatchObject({ overallCode: "OVER_LIMIT", statuses: [{ code: "OVER_LIMIT", currentLimit: { requestsPerUnit: 2, unit: "HOUR" } }] });

    // SLUICE_RLS_DOMAIN keeps Sluice's own keys on /json too: an unknown API key is denied, saying why.
    const sluice = await post({ domain: "sluice", descriptors: [{ entries: [{ key: "api_key", value: "sk_nobody" }, { key: "operation", value: "GET /v1/orders" }] }] });
    expect(sluice.status).toBe(429);
    expect(await sluice.json()).toMatchObject({ overallCode: "OVER_LIMIT", responseHeadersToAdd: expect.arrayContaining([{ key: "x-sluice-reason", value: "unknown_key" }]) });

    expect((await post(request, null)).status).toBe(401);
    expect((await post(request, "wrong")).status).toBe(401);
    const bad: [unknown, string][] = [
      [{ domain: "edge", descriptors: [{ entries: [{ kee: "open" }] }] }, "descriptors[0].entries[0].kee"],
      [{ domain: "edge", hitsAddend: -1, descriptors: [{ entries: [{ key: "open", value: "v" }] }] }, "hitsAddend"],
      [{ domain: "edge", descriptors: [{ entries: [{ key: "open", value: "v" }], limit: { requestsPerUnit: 1, unit: "FORTNIGHT" } }] }, "descriptors[0].limit.unit"],
      [{ domain: "edge", descriptors: [] }, "descriptors"],
      [{ descriptors: [{ entries: [{ key: "open", value: "v" }] }] }, "domain"],
      [[1, 2], "(body)"],
    ];
    for (const [input, field] of bad) {
      const r = await post(input);
      expect(r.status, JSON.stringify(input)).toBe(400);
      expect(await r.json()).toMatchObject({ error: { code: "invalid_request", field } });
    }
  });

  it("counts each decided descriptor in usage (the domain as tenant, the rule as operation and limit) and in /metrics by domain, rule and outcome", async () => {
    await call(edge(["named", "u"], ["nothing", "u"]));
    await call(edge(["named", "u"]));
    await call({ domain: "somebody-else", descriptors: [{ entries: [{ key: "k", value: "v" }] }] });
    const usage = await until(async () => {
      const minutes = await redis.smembers(keys.usageMinutes());
      const parsed: UsageMinute[] = [];
      for (const m of minutes) parsed.push(parseUsageHash(Number(m), await redis.hgetall(keys.usageMinute(Number(m)))));
      const named = parsed.flatMap((u) => u.decisions).filter((d) => d.operation === "per-named");
      return named.length >= 2 ? { decisions: named, limitDenials: parsed.flatMap((u) => u.limitDenials).filter((d) => d.limit === "per-named") } : null;
    });
    expect(usage.decisions.map((d) => [d.tenant, d.tier, d.outcome, d.count]).sort()).toEqual([
      ["envoy:edge", "envoy:edge", "allowed", 1],
      ["envoy:edge", "envoy:edge", "denied", 1],
    ]);
    expect(usage.limitDenials).toEqual([{ tenant: "envoy:edge", tier: "envoy:edge", operation: "per-named", limit: "per-named", count: 1 }]);

    const metrics = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
    expect(metrics).toContain('sluice_envoy_decisions_total{domain="edge",rule="per-named",outcome="allowed"} 1');
    expect(metrics).toContain('sluice_envoy_decisions_total{domain="edge",rule="per-named",outcome="denied"} 1');
    expect(metrics).toMatch(/sluice_envoy_decisions_total\{domain="edge",rule="",outcome="no_rule"\} [1-9]/);
    // A domain the policy does not know is the client's word: never a label value.
    expect(metrics).not.toContain("somebody-else");
    expect(metrics).toMatch(/sluice_envoy_decisions_total\{domain="_unknown",rule="",outcome="unknown_domain"\} [1-9]/);
  });

  it("answers each rule by its failure mode when Redis does not answer within the budget: open OK, closed OVER_LIMIT, local counted in process", async () => {
    const pid = own.pid()!;
    process.kill(pid, "SIGSTOP");
    const replies: Record<string, Reply[]> = { open: [], closed: [], local: [] };
    const started = performance.now();
    try {
      for (let i = 0; i < 3; i++) for (const key of ["open", "closed", "local"]) replies[key]!.push(await call(edge([key, "outage"])));
    } finally {
      process.kill(pid, "SIGCONT");
    }
    const elapsedMs = performance.now() - started;
    for (const r of Object.values(replies).flat()) expect(r.error).toBeUndefined();
    expect(replies.open!.map((r) => r.response?.overall_code)).toEqual(["OK", "OK", "OK"]);
    expect(replies.closed!.map((r) => r.response?.overall_code)).toEqual(["OVER_LIMIT", "OVER_LIMIT", "OVER_LIMIT"]);
    expect(replies.closed![0]!.response?.response_headers_to_add).toContainEqual({ key: "x-sluice-reason", value: "store_unavailable" });
    // Local: this server's share of 2 per hour (one instance: all of it), counted here.
    expect(replies.local!.map((r) => r.response?.statuses?.[0]?.code)).toEqual(["OK", "OK", "OVER_LIMIT"]);
    expect(replies.local![0]!.response?.statuses?.[0]?.limit_remaining).toBe(1);
    // Nine calls, none waiting much past its budget (closed waits 4 × it).
    expect(elapsedMs).toBeLessThan(9 * 4 * BUDGET_MS + 2_000);
  });
});

async function until<T>(condition: () => T | Promise<T>): Promise<NonNullable<T>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 50));
  }
}
