/**
 * GET /v1/usage on a real decision server with real Redis (issue #26): a tenant read token reads
 * its own tenant's limits and quotas — the numbers the decision API itself answers — and nothing of
 * another tenant; it cannot make decisions, and a service token or a wrong token cannot read usage.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";
import { spawnDecisionServer, type SpawnedServer } from "../../lib/processes/harness";
import { compileFixture, writeFixturePolicy } from "../../lib/decision/testing/fixture";
import type { PolicyFileInput } from "../../lib/policy/policy-file";
import type { TenantUsageAnswer } from "../../lib/policy/tenant-usage-answer";
import { tenantUsageAnswerSchema } from "../../lib/openapi/decision";
import { sha256Hex } from "../../lib/redis/key-index";
import { setTenantToken } from "../../lib/redis/policy";

const SERVICE = "svc_usage_test_0001";
const ACME_TOKEN = "sl_ten_acme_usage_test_token_0001";
const GLOBEX_TOKEN = "sl_ten_globex_usage_test_token_01";
const ACME_KEY = "sk_test_usage_acme_01";
const GLOBEX_KEY = "sk_test_usage_globex1";

let redis: Redis;
let server: SpawnedServer;

function policy(): PolicyFileInput {
  return {
    version: 1,
    tiers: [
      {
        name: "pro",
        limits: [
          { operation: "*", scope: "tenant", algorithm: "fixed_window", limit: 50, window: "1h" },
          { operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 100, window: "1m" },
        ],
        quotas: [
          { operation: "*", period: "month", limit: 20 },
          { operation: "*", period: "day", limit: 8 },
        ],
      },
    ],
    tenants: [
      { slug: "acme", name: "Acme", tier: "pro", billing: { anchor: "2026-03-15", timeZone: "America/Los_Angeles" }, keys: [{ name: "k", key: ACME_KEY }] },
      { slug: "globex", name: "Globex", tier: "pro", keys: [{ name: "k", key: GLOBEX_KEY }] },
    ],
  };
}

beforeAll(async () => {
  redis = new Redis(testRedisUrl());
  const prefix = `${testRedisPrefix()}us${randomBytes(3).toString("hex")}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  await writeFixturePolicy(redis, compileFixture(policy()));
  await setTenantToken(redis, sha256Hex(ACME_TOKEN), "acme");
  await setTenantToken(redis, sha256Hex(GLOBEX_TOKEN), "globex");
  server = await spawnDecisionServer({ REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: SERVICE }, { waitReady: true });
}, 120_000);
afterAll(async () => {
  await server?.stop();
  redis?.disconnect();
});

const usage = async (token: string | null) => {
  const res = await fetch(`${server.url}/v1/usage`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as TenantUsageAnswer & { error?: { code: string } } };
};
const check = async (key: string, token = SERVICE, dryRun = false) => {
  const res = await fetch(`${server.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ key, operation: "GET /x", dryRun, explain: true }),
  });
  return { status: res.status, body: (await res.json()) as { allowed: boolean; checks?: { kind: string; name: string; remaining: number; resetSeconds: number; limit: number }[] } };
};

describe("GET /v1/usage with a tenant token", () => {
  it("answers the tenant's own limits and quotas with the numbers /v1/check answers, and nothing of another tenant", async () => {
    for (let i = 0; i < 3; i++) expect((await check(ACME_KEY)).body.allowed).toBe(true);
    for (let i = 0; i < 5; i++) expect((await check(GLOBEX_KEY)).body.allowed).toBe(true);
    const { status, body } = await usage(ACME_TOKEN);
    expect(status).toBe(200);
    expect(body.tenant).toBe("acme");
    expect(tenantUsageAnswerSchema.safeParse(body).error).toBeUndefined();
    expect(JSON.stringify(body)).not.toContain("globex");
    const month = body.quotas.find((q) => q.period === "month")!;
    const day = body.quotas.find((q) => q.period === "day")!;
    expect(month).toMatchObject({ limit: 20, used: 3, remaining: 17 });
    expect(day).toMatchObject({ limit: 8, used: 3, remaining: 5 });
    expect(month.periodLabel).toMatch(/@America\/Los_Angeles$/);
    expect(new Date(month.periodStart).getUTCDate()).toBe(15);
    const tenantWide = body.limits.find((l) => l.scope === "tenant")!;
    expect(tenantWide).toMatchObject({ limit: 50, used: 3, remaining: 47 });
    expect(tenantWide.resetSeconds).toBeGreaterThan(0);
    expect(body.limits.find((l) => l.scope === "api_key")).toMatchObject({ used: null, remaining: null, resetSeconds: null });

    // The decision API's own numbers: a dry run answers what is left now, per check.
    const explained = (await check(ACME_KEY, SERVICE, true)).body.checks!;
    const quotaChecks = explained.filter((c) => c.kind === "quota");
    expect(quotaChecks.map((c) => c.remaining).sort()).toEqual([day.remaining, month.remaining].sort());
    for (const c of quotaChecks) {
      const row = c.name.endsWith("-month") ? month : day;
      expect(Math.abs(c.resetSeconds - row.resetSeconds)).toBeLessThanOrEqual(1);
    }
    expect(explained.find((c) => c.kind === "limit" && c.limit === 50)!.remaining).toBe(tenantWide.remaining);

    const other = await usage(GLOBEX_TOKEN);
    expect(other.body.tenant).toBe("globex");
    expect(other.body.quotas.find((q) => q.period === "month")).toMatchObject({ used: 5, remaining: 15, periodLabel: expect.stringMatching(/^\d{4}-\d{2}$/) });
    expect(JSON.stringify(other.body)).not.toContain("acme");
  });

  it("a tenant token cannot make decisions; a service token, no token or a wrong or revoked token reads no usage", async () => {
    expect((await check(ACME_KEY, ACME_TOKEN)).status).toBe(401);
    expect((await usage(SERVICE)).status).toBe(403);
    expect((await usage(null)).status).toBe(401);
    expect((await usage("sl_ten_not_a_real_token_000000000")).status).toBe(401);
    await setTenantToken(redis, sha256Hex(GLOBEX_TOKEN), null);
    const revoked = await usage(GLOBEX_TOKEN);
    expect(revoked.status).toBe(401);
    expect(JSON.stringify(revoked.body)).not.toContain("quotas");
    const post = await fetch(`${server.url}/v1/usage`, { method: "POST", headers: { authorization: `Bearer ${ACME_TOKEN}` } });
    expect(post.status).toBe(405);
  });
});
