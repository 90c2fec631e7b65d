/**
 * Time-dependent choices on the decision path follow the store's clock, never the decision
 * server's (#17 defect 7): with one server's clock 30 s ahead, an override's expiry (and so the
 * limit applied) must not differ between servers.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import type { PolicyFileInput } from "../policy/policy-file";
import { compileFixture, writeFixturePolicy } from "./testing/fixture";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";

const TOKEN = "svc_test_token_clock";
const KEY = "sk_test_clock_0000001";
let redis: Redis;
let honest: SpawnedServer;
let ahead: SpawnedServer;
let expiresAtMs: number;

beforeAll(async () => {
  const prefix = `${testRedisPrefix()}ck${randomBytes(3).toString("hex")}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  redis = new Redis(testRedisUrl());
  const env = { REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: TOKEN };
  await writeFixturePolicy(redis, compileFixture(policy(null), 1));
  [honest, ahead] = await Promise.all([spawnDecisionServer(env, { waitReady: true }), spawnDecisionServer(env, { waitReady: true, clockSkewMs: 30_000 })]);
  // v2: an override that ends 6 s from now on Redis's clock (the server 30 s ahead would see it expired).
  expiresAtMs = (await redisNowMs()) + 6_000;
  await writeFixturePolicy(redis, compileFixture(policy(expiresAtMs), 2));
  for (const server of [honest, ahead]) {
    while ((await answer(server)).policyVersion !== 2) await new Promise((r) => setTimeout(r, 50));
  }
}, 120_000);

afterAll(async () => {
  await Promise.all([honest?.stop(), ahead?.stop()]);
  redis?.disconnect();
});

function policy(overrideUntilMs: number | null): PolicyFileInput {
  return {
    version: 1,
    tiers: [{ name: "t", limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 4, window: "1h" }] }],
    tenants: [
      {
        slug: "clock",
        name: "Clock",
        tier: "t",
        overrides: overrideUntilMs === null ? [] : [{ operation: "*", scope: "api_key", limit: 1000, expiresAt: new Date(overrideUntilMs).toISOString() }],
        keys: [{ name: "k", key: KEY }],
      },
    ],
  };
}

async function answer(server: SpawnedServer): Promise<{ limit: number; policyVersion: number }> {
  const res = await fetch(`${server.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ key: KEY, operation: "GET /x", dryRun: true }),
  });
  return (await res.json()) as { limit: number; policyVersion: number };
}
const limitOf = async (server: SpawnedServer) => (await answer(server)).limit;

async function redisNowMs(): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

describe("the store's clock, with one decision server 30 s ahead", () => {
  it("both servers apply the override until it expires on the store's clock, and the tier's limit after", async () => {
    expect(await redisNowMs()).toBeLessThan(expiresAtMs - 1_000);
    for (let i = 0; i < 5; i++) expect([await limitOf(honest), await limitOf(ahead)]).toEqual([1000, 1000]);
    while ((await redisNowMs()) < expiresAtMs + 500) await new Promise((r) => setTimeout(r, 100));
    for (let i = 0; i < 5; i++) expect([await limitOf(honest), await limitOf(ahead)]).toEqual([4, 4]);
  }, 60_000);
});
