import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../test/helpers";
import { compileFixture, FIXTURE_KEYS, writeFixturePolicy } from "../lib/decision/testing/fixture";
import { spawnDecisionServer, type SpawnedServer } from "../lib/processes/harness";
import { startTraffic } from "./traffic";

const TOKEN = "svc_traffic_0001";
let redis: Redis;
let server: SpawnedServer;

beforeAll(async () => {
  const prefix = `${testRedisPrefix()}tr${randomBytes(3).toString("hex")}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  redis = new Redis(testRedisUrl());
  await writeFixturePolicy(redis, compileFixture());
  server = await spawnDecisionServer({ REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: TOKEN }, { waitReady: true });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  redis?.disconnect();
});

it("generates a mix with some tenants over their limits, and stops by itself", async () => {
  const handle = startTraffic({
    url: server.url,
    serviceToken: TOKEN,
    // acme (free: 5/min per key) is the hot key; big (pro) is polite.
    keys: [FIXTURE_KEYS.acme, FIXTURE_KEYS.big, FIXTURE_KEYS.conc],
    hotShare: 0.34,
    rps: 60,
    durationMs: 2_000,
  });
  const started = Date.now();
  const stats = await handle.done;
  expect(Date.now() - started).toBeLessThan(5_000);
  expect(stats.errors).toBe(0);
  expect(stats.sent).toBeGreaterThan(80);
  expect(stats.allowed).toBeGreaterThan(0);
  expect(stats.byReason.rate_limited ?? 0).toBeGreaterThan(0);
  expect(stats.byReason.unknown_key ?? 0).toBeGreaterThanOrEqual(0);
  const sent = stats.sent;
  await new Promise((r) => setTimeout(r, 200));
  expect(handle.stats.sent).toBe(sent);
});
