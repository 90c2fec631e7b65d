/**
 * A service token's "last used" (#29.9): a decision server notes the published tokens it accepts
 * (one Set.add on the request) and writes them off the decision path, at most once per flush
 * interval (a minute in production), where the control plane's Settings page reads them.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "../../test/helpers";
import { compileFixture, FIXTURE_KEYS, writeFixturePolicy } from "../../lib/decision/testing/fixture";
import { keys } from "../../lib/redis/keys";
import { sha256Hex } from "../../lib/redis/key-index";
import { listApiTokensWithUse } from "../../lib/services/access/api-token-use";
import { startDecisionServer, type DecisionServer } from "./server";

const TOKEN = `svc_last_used_${randomBytes(4).toString("hex")}`;
const IDLE = `svc_never_used_${randomBytes(4).toString("hex")}`;

let redis: Redis;
let fresh: FreshDatabase;
let server: DecisionServer;

beforeAll(async () => {
  process.env.SLUICE_REDIS_PREFIX = `${testRedisPrefix()}tu${randomBytes(2).toString("hex")}:`;
  redis = new Redis(testRedisUrl());
  fresh = await freshDatabase();
  await writeFixturePolicy(redis, compileFixture(), [sha256Hex(TOKEN), sha256Hex(IDLE)]);
  for (const [token, name] of [[TOKEN, "edge"], [IDLE, "idle"]] as const) {
    await fresh.db.apiToken.create({ data: { id: `tok_${name}`, kind: "service", name, hash: sha256Hex(token), prefix: token.slice(0, 12), role: "billing" } });
  }
  server = await startDecisionServer({ port: 0, host: "127.0.0.1", redisUrl: testRedisUrl(), redisTimeoutMs: 200, pollMs: 1_000, instances: 1, serviceTokens: [], tokenUseFlushMs: 200 });
}, 120_000);

afterAll(async () => {
  await server?.close();
  redis?.disconnect();
  await fresh?.drop();
});

const check = () =>
  fetch(`http://127.0.0.1:${server.port}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ key: FIXTURE_KEYS.big, operation: "GET /v1/orders" }),
  });

describe("a service token's last use", () => {
  it("is written within the flush interval after a decision, and shown on Settings; a token never used shows none", async () => {
    const before = Date.now();
    for (let i = 0; i < 20; i++) expect((await check()).status).toBe(200);
    await expect.poll(() => redis.hget(keys.serviceTokenLastUsed(), sha256Hex(TOKEN)), { timeout: 5_000 }).not.toBeNull();
    // Past the next flush: nothing was accepted since, so nothing more is written.
    await new Promise((r) => setTimeout(r, 600));
    const at = Number(await redis.hget(keys.serviceTokenLastUsed(), sha256Hex(TOKEN)));
    expect(at).toBeGreaterThanOrEqual(before);
    const rows = await listApiTokensWithUse({ db: fresh.db, redis });
    expect(rows.find((r) => r.name === "edge")!.lastUsedAt?.getTime()).toBe(at);
    expect(rows.find((r) => r.name === "idle")!.lastUsedAt).toBeNull();
    await new Promise((r) => setTimeout(r, 600));
    expect(Number(await redis.hget(keys.serviceTokenLastUsed(), sha256Hex(TOKEN)))).toBe(at);
  });
});
