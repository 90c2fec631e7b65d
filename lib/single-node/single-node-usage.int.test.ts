/**
 * Single-node mode (no Redis) and billing periods (issue #26): the in-process quota counters are
 * seeded at start from the row of each tenant's own period — an anchored tenant's
 * `<date>@America/Los_Angeles` row, not its UTC month row — and GET /v1/usage answers, with a
 * tenant token kept in PostgreSQL (polled with the service tokens), the numbers the decision API itself answers, for that tenant only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "../../test/helpers";
import type { Db } from "../db/client";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";
import { startOwnRedis, type OwnRedis } from "../processes/redis-server";
import { billingPeriod } from "../policy/billing-period";
import type { PolicyFileInput } from "../policy/policy-file";
import { quotaPeriod } from "../policy/quota-period";
import type { TenantUsageAnswer } from "../policy/tenant-usage-answer";
import { applyPolicyFile } from "../services/policy/apply-policy-file";
import { createApiToken } from "../services/access/create-api-token";
import { publishPolicy } from "../services/policy/publish-policy";
import { revokeApiToken } from "../services/access/revoke-api-token";

const actor = "test:single-node-usage";
const LA = { anchor: "2026-03-15", timeZone: "America/Los_Angeles" };
const KEYS = { acme: "sk_snu_acme_0001", globex: "sk_snu_globex_01" } as const;

function policy(): PolicyFileInput {
  return {
    version: 1,
    defaults: { failureMode: "closed" },
    tiers: [
      {
        name: "pro",
        weight: 1,
        limits: [{ operation: "*", scope: "tenant", algorithm: "fixed_window", limit: 50, window: "1h" }],
        quotas: [{ operation: "*", period: "month", limit: 20, overage: "block" }],
      },
    ],
    globalCaps: [],
    tenants: [
      { slug: "acme", name: "Acme", tier: "pro", billing: LA, keys: [{ name: "k", key: KEYS.acme }] },
      { slug: "globex", name: "Globex", tier: "pro", keys: [{ name: "k", key: KEYS.globex }] },
    ],
  };
}

let fresh: FreshDatabase;
let db: Db;
let ownRedis: OwnRedis;
let server: SpawnedServer;
let service: string;
const tenantTokens: Record<string, { id: string; token: string }> = {};

const usage = async (token: string) => {
  const res = await fetch(`${server.url}/v1/usage`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: (await res.json()) as TenantUsageAnswer };
};
const check = async (key: string, dryRun = false) => {
  const res = await fetch(`${server.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${service}`, "content-type": "application/json" },
    body: JSON.stringify({ key, operation: "GET /x", dryRun, explain: true }),
    signal: AbortSignal.timeout(10_000),
  });
  return (await res.json()) as { allowed: boolean; checks: { kind: string; remaining: number; limit: number }[] };
};

beforeAll(async () => {
  ownRedis = await startOwnRedis();
  fresh = await freshDatabase();
  db = fresh.db;
  await applyPolicyFile(db, policy(), { actor });
  service = (await createApiToken({ db, redis: null }, { kind: "service", name: "gateway" }, actor)).token;
  for (const tenant of ["acme", "globex"]) tenantTokens[tenant] = await createApiToken({ db, redis: null }, { kind: "tenant", name: "portal", tenant }, actor);
  expect(await publishPolicy({ db, redis: null }, { actor })).toMatchObject({ status: "published" });
  // What an earlier run of this server committed: acme 4 units in its own period (and 9 in the UTC
  // month, which also holds its usage of the previous period), globex 6 in the UTC month.
  const published = (await db.policyVersion.findFirstOrThrow({ orderBy: { version: "desc" } })).document as { tiers: Record<string, { quotas: { id: string }[] }> };
  const quotaId = published.tiers.pro!.quotas[0]!.id;
  const nowMs = Date.now();
  await db.quotaUsage.createMany({
    data: [
      { tenant: "acme", quotaId, period: billingPeriod(nowMs, "month", LA).label, used: 4n },
      { tenant: "acme", quotaId, period: quotaPeriod(nowMs, "month").label, used: 9n },
      { tenant: "globex", quotaId, period: quotaPeriod(nowMs, "month").label, used: 6n },
    ],
  });
  server = await spawnDecisionServer({ SLUICE_MODE: "single-node", DATABASE_URL: fresh.url, REDIS_URL: ownRedis.url, SLUICE_SERVICE_TOKENS: "", SLUICE_INSTANCES: "1" }, { waitReady: true });
}, 120_000);

afterAll(async () => {
  await server?.stop().catch(() => undefined);
  await fresh?.drop();
  await ownRedis?.stop();
});

describe("single-node: anchored quotas and GET /v1/usage from the in-process counters", () => {
  it("seeds an anchored tenant's counter from its own period's row, and answers its usage as /v1/check does", async () => {
    expect(server.output()).toContain("2 quota counters seeded from QuotaUsage");
    expect((await check(KEYS.acme)).allowed).toBe(true);
    const { status, body } = await usage(tenantTokens.acme!.token);
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.tenant).toBe("acme");
    expect(JSON.stringify(body)).not.toContain("globex");
    const month = body.quotas[0]!;
    expect(month).toMatchObject({ limit: 20, used: 5, remaining: 15, periodLabel: billingPeriod(Date.now(), "month", LA).label });
    expect(body.limits.find((l) => l.scope === "tenant")).toMatchObject({ limit: 50, used: 1, remaining: 49 });
    // The decision API's own numbers: a dry run answers what is left now.
    const explained = await check(KEYS.acme, true);
    expect(explained.checks.find((c) => c.kind === "quota")!.remaining).toBe(month.remaining);

    const other = await usage(tenantTokens.globex!.token);
    expect(other.body.quotas[0]).toMatchObject({ used: 6, remaining: 14, periodLabel: quotaPeriod(Date.now(), "month").label });
    expect(JSON.stringify(other.body)).not.toContain("acme");
  });

  it("refuses a service token, a wrong token and, within a poll, a revoked one", async () => {
    expect((await usage(service)).status).toBe(403);
    expect((await usage("sl_ten_not_a_real_token_000000000")).status).toBe(401);
    await revokeApiToken({ db, redis: null }, { id: tenantTokens.globex!.id }, actor);
    const started = Date.now();
    while ((await usage(tenantTokens.globex!.token)).status !== 401) {
      expect(Date.now() - started, "revoked token still reads usage").toBeLessThan(3_000);
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});
