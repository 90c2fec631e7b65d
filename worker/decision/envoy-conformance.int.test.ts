/**
 * envoyproxy/ratelimit's behaviour (lib/policy/envoy/testing/cases.ts) against the real decision
 * server: each case's config through `sluice import envoy` → the policy file's parse → compile →
 * the document in Redis as publish writes it → a decision server (worker/decision/server.ts, in
 * this process so the counters can run on the case's clock) → ShouldRateLimit over real gRPC from
 * a @grpc/grpc-js client built from Envoy's protos → the same answers the pure model gives
 * (lib/policy/envoy/conformance.test.ts). The counters are Redis's: the ENVOY_COUNT script and,
 * for Sluice's algorithms, DECIDE, both with the case's time in place of Redis TIME.
 */
import * as grpc from "@grpc/grpc-js";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { createLogger } from "../../lib/log";
import { freePort } from "../../lib/net/ports";
import { sha256Hex } from "../../lib/redis/key-index";
import { writeFixturePolicy } from "../../lib/decision/testing/fixture";
import { compilePolicy, finalizePolicy } from "../../lib/policy/compile";
import type { EnvoyResponse, EnvoyStatus } from "../../lib/policy/envoy/decide";
import { ENVOY_CASES } from "../../lib/policy/envoy/testing/cases";
import { CASE_START_MS, runSteps, type EnvoyBackend } from "../../lib/policy/envoy/testing/conformance";
import type { ReportedUnit } from "../../lib/policy/envoy/units";
import { rlsClient, type RlsRequestMessage, type RlsResponseMessage } from "../../lib/rls/protos";
import { importEnvoyConfigs } from "../../lib/services/policy/import-envoy";
import { parsePolicyInput } from "../../lib/services/policy/policy-input";
import { createRedisStore } from "../../lib/store/redis";
import { createRedisEnvoyCounters } from "../../lib/envoy/redis-store";
import { startDecisionServer, type DecisionServer } from "./server";

const TOKEN = "svc_envoy_conformance_0001";

let redis: Redis;
let server: DecisionServer;
let client: ReturnType<typeof rlsClient>;
let clockMs = CASE_START_MS;
let version = 0;

beforeAll(async () => {
  redis = new Redis(testRedisUrl());
  const testClock = () => clockMs;
  server = await startDecisionServer({
    port: 0,
    host: "127.0.0.1",
    grpcPort: await freePort(),
    redisUrl: testRedisUrl(),
    // Lenient: this is a semantics suite, not a timeout test on a loaded machine.
    redisTimeoutMs: 2_000,
    pollMs: 100,
    instances: 1,
    serviceTokens: [TOKEN],
    store: createRedisStore(redis, { testClock }),
    envoyCounters: createRedisEnvoyCounters(redis, { testClock }),
    logger: createLogger("decision", { level: "error" }),
  });
  client = rlsClient(`127.0.0.1:${server.grpcPort}`);
});

afterAll(async () => {
  client?.close();
  await server?.close();
  redis?.disconnect();
});

/** This run's Envoy counters, so each case starts from zero as on a fresh service. */
async function deleteCounters(): Promise<void> {
  const stream = redis.scanStream({ match: `${testRedisPrefix()}{e:*`, count: 1_000 });
  for await (const batch of stream as AsyncIterable<string[]>) if (batch.length > 0) await redis.del(...batch);
}

function call(request: RlsRequestMessage): Promise<{ response: RlsResponseMessage } | { error: string }> {
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${TOKEN}`);
  return new Promise((resolve) => {
    client.ShouldRateLimit(request, metadata, { deadline: Date.now() + 10_000 }, (error, response) => {
      resolve(error ? { error: error.details } : { response: response! });
    });
  });
}

/** The wire's answer in the model's shape: proto3 leaves zero values out (the client reads them absent). */
function asEnvoyResponse(r: RlsResponseMessage): EnvoyResponse {
  return {
    overall_code: r.overall_code === "OVER_LIMIT" ? "OVER_LIMIT" : "OK",
    statuses: (r.statuses ?? []).map((s): EnvoyStatus => {
      const status: EnvoyStatus = { code: s.code === "OVER_LIMIT" ? "OVER_LIMIT" : "OK", limit_remaining: s.limit_remaining ?? 0 };
      if (s.current_limit) {
        status.current_limit = { name: s.current_limit.name ?? "", requests_per_unit: s.current_limit.requests_per_unit ?? 0, unit: (s.current_limit.unit ?? "UNKNOWN") as ReportedUnit };
      }
      if (s.duration_until_reset) status.duration_until_reset = { seconds: Number(s.duration_until_reset.seconds ?? 0) };
      return status;
    }),
  };
}

const grpcBackend: EnvoyBackend = {
  async load(policyText) {
    const parsed = parsePolicyInput(policyText);
    if (!parsed.ok) throw new Error(`the imported policy does not parse: ${JSON.stringify(parsed.issues)}`);
    version++;
    const doc = finalizePolicy(compilePolicy({ ...parsed.value, tenants: [] }), version, new Date(0));
    await writeFixturePolicy(redis, { doc, keyIndex: {} }, [sha256Hex(TOKEN)]);
    const deadline = Date.now() + 10_000;
    while (server.policy.current?.version !== version) {
      if (Date.now() > deadline) throw new Error(`the decision server did not load v${version}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    await deleteCounters();
  },
  async shouldRateLimit(request, atMs) {
    clockMs = CASE_START_MS + atMs;
    const answer = await call(request);
    return "error" in answer ? answer : { response: asEnvoyResponse(answer.response) };
  },
  // Many calls in flight, as Envoy sends them: the server coalesces them into few script calls.
  async send(request, atMs, n) {
    clockMs = CASE_START_MS + atMs;
    for (let sent = 0; sent < n; sent += 100) await Promise.all(Array.from({ length: Math.min(100, n - sent) }, () => call(request)));
  },
};

describe("the decision server answers ShouldRateLimit over gRPC as envoyproxy/ratelimit does, config imported unchanged", () => {
  for (const c of ENVOY_CASES) {
    it(`${c.name} (${c.source})`, async () => {
      const imported = importEnvoyConfigs(c.configs, { mergeDomains: c.mergeDomains });
      if (!imported.ok) throw new Error(`import refused: ${JSON.stringify(imported.issues)}`);
      await grpcBackend.load(imported.text);
      let steps = 0;
      for await (const r of runSteps(c, grpcBackend)) {
        expect(r.got, r.label).toEqual(r.want);
        steps++;
      }
      expect(steps).toBe(c.steps.length);
    });
  }
});

describe("more than theirs, on the same server: the same rule with algorithm: sliding_window_counter", () => {
  it("refuses the burst across a window edge that their fixed window lets through", async () => {
    const rule = (extra: string) => `
      descriptors:
        - key: user
          rate_limit: { unit: minute, requests_per_unit: 10${extra} }`;
    await grpcBackend.load(`version: 1
rateLimitService:
  domains:
    - domain: fixed${rule("")}
    - domain: sliding${rule(", algorithm: sliding_window_counter")}
`);
    const burst = async (domain: string, atS: number) => {
      await grpcBackend.send!({ domain, descriptors: [{ entries: [{ key: "user", value: "u" }] }] }, atS * 1000, 9);
      return grpcBackend.shouldRateLimit({ domain, descriptors: [{ entries: [{ key: "user", value: "u" }] }] }, atS * 1000);
    };
    const codes = async (domain: string) => {
      // Ten at the end of one minute, ten at the start of the next: 20 within two seconds.
      const first = await burst(domain, 59);
      const second = await burst(domain, 61);
      return ["response" in first ? first.response.overall_code : first.error, "response" in second ? second.response.overall_code : second.error];
    };
    expect(await codes("fixed")).toEqual(["OK", "OK"]);
    expect(await codes("sliding")).toEqual(["OK", "OVER_LIMIT"]);
  });
});
