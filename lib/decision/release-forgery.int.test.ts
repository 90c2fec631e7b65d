/**
 * Issue #30, defect 1: a lease id comes back from the client, which can change it. A real lease
 * whose id was changed to 3,000,000 units made RELEASE loop three million ZREMs inside Redis (5 s
 * of a blocked Redis: every fail-closed operation 503, every open one unlimited). Against a real
 * decision server and real Redis: the forged release is refused at once, Redis keeps answering,
 * and the lease stays held until its real id frees it.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { compileFixture, FIXTURE_KEYS, writeFixturePolicy } from "./testing/fixture";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";

const TOKEN = "svc_test_token_0001";
let redis: Redis;
let server: SpawnedServer;

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
const checkConc = async () => (await (await post("/v1/check", { key: FIXTURE_KEYS.conc, operation: "GET /v1/orders" })).json()) as { allowed: boolean; reason: string; leaseId?: string };

beforeAll(async () => {
  const prefix = `${testRedisPrefix()}lf${randomBytes(3).toString("hex")}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  redis = new Redis(testRedisUrl());
  await writeFixturePolicy(redis, compileFixture());
  server = await spawnDecisionServer({ REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: TOKEN }, { waitReady: true });
});

afterAll(async () => {
  await server?.stop();
  redis?.disconnect();
});

it("a lease id changed to 3,000,000 units is refused at once (400 naming leaseId), Redis keeps answering, and the lease stays held", async () => {
  const held = await checkConc();
  expect(held.allowed).toBe(true);
  const forged = held.leaseId!.replace(/^([0-9a-f]{32})\.1\./, "$1.3000000.");
  expect(forged).not.toBe(held.leaseId);

  const startedMs = performance.now();
  const release = post("/v1/release", { leaseId: forged });
  // While the release is in Redis's hands: Redis answers a PING (a loop of three million ZREMs
  // held every other client for seconds).
  await new Promise((r) => setTimeout(r, 20));
  const pingStartedMs = performance.now();
  expect(await redis.ping()).toBe("PONG");
  const pingMs = performance.now() - pingStartedMs;
  const res = await release;
  const releaseMs = performance.now() - startedMs;

  expect(res.status).toBe(400);
  expect(await res.json()).toMatchObject({ error: { code: "invalid_request", field: "leaseId" } });
  // Generous bounds for a busy machine; the forged release used to take about 5 s.
  expect(releaseMs).toBeLessThan(2_000);
  expect(pingMs).toBeLessThan(1_000);

  // Nothing was freed: the limit of 1 is still taken, until the real id releases it.
  expect(await checkConc()).toMatchObject({ allowed: false, reason: "concurrency_limited" });
  expect(await (await post("/v1/release", { leaseId: held.leaseId })).json()).toEqual({ released: true });
  const again = await checkConc();
  expect(again.allowed).toBe(true);
  expect(await (await post("/v1/release", { leaseId: again.leaseId })).json()).toEqual({ released: true });
});
