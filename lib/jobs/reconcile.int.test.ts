/**
 * Quota reconciliation against a real decision server on the demo policy: Postgres (QuotaUsage,
 * from the drained usage) and the Redis quota counters count the same units, so a cost-2 operation
 * no longer shows as a difference (the demo's worker warned "quota counters differ from rollups"
 * for every tenant sending POST /v1/orders: QuotaUsage counted decisions, Redis units); usage still
 * in flight is not a real difference; a counter that really differs is.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "../../test/helpers";
import { createDb, type Db } from "../db/client";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";
import { createRedisClient, type RedisClient } from "../redis/client";
import { keys } from "../redis/keys";
import { applyPolicyFile } from "../services/policy/apply-policy-file";
import { publishPolicy } from "../services/policy/publish-policy";
import { reconcileQuotas } from "./reconcile";
import { drainClosedMinutes } from "./rollup";

// Acme anchored on the 15th in Los Angeles: its counters and its rows carry its own periods' labels.
const DEMO = readFileSync(path.resolve(import.meta.dirname, "../../examples/demo-policy.yaml"), "utf8").replace(
  "  - slug: acme\n    name: Acme Corp\n",
  "  - slug: acme\n    name: Acme Corp\n    billing: { anchor: 2026-01-15, timeZone: America/Los_Angeles }\n",
);
const ACME = "sk_test_acme_ci_0001";
const TOKEN = "svc_reconcile_test_0001";
const GLOBEX = "sk_test_globex_ci_0001";
let fresh: FreshDatabase;
let db: Db;
let redis: RedisClient;
let prefix: string;
let server: SpawnedServer | null = null;

beforeAll(async () => {
  prefix = `${testRedisPrefix()}rc${Date.now() % 100_000}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  fresh = await freshDatabase();
  db = createDb(fresh.url);
  redis = createRedisClient({ url: testRedisUrl(), commandTimeoutMs: 5_000 });
  await applyPolicyFile(db, DEMO, { actor: "test" });
  await publishPolicy({ db, redis }, { actor: "test" });
  server = await spawnDecisionServer({ REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: TOKEN }, { waitReady: true });
}, 60_000);

afterAll(async () => {
  await server?.stop().catch(() => undefined);
  await db?.$disconnect();
  redis?.disconnect();
  await fresh?.drop();
});

async function check(operation: string, key = GLOBEX): Promise<{ allowed: boolean }> {
  const res = await fetch(`${server!.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ key, operation, ip: "198.51.100.7" }),
  });
  return (await res.json()) as { allowed: boolean };
}

describe("quota reconciliation", () => {
  it("counts units on both sides, ignores usage in flight, and reports a real difference", async () => {
    // POST /v1/orders is orders-write, cost 2 in the demo policy; GET /v1/search costs 1.
    const passed = { orders: 0, search: 0 };
    for (let i = 0; i < 5; i++) if ((await check("POST /v1/orders")).allowed) passed.orders++;
    for (let i = 0; i < 3; i++) if ((await check("GET /v1/search")).allowed) passed.search++;
    expect(passed).toEqual({ orders: 5, search: 3 });
    for (let i = 0; i < 4; i++) expect((await check("GET /v1/search", ACME)).allowed).toBe(true);

    // In flight: the server has not flushed (or the worker not drained) everything yet; keep sending while reconciling.
    let sending = true;
    const traffic = (async () => {
      while (sending) await check("POST /v1/orders");
    })();
    const during = await reconcileQuotas(db, redis, { nowMs: Date.now(), prefix });
    sending = false;
    await traffic;
    const month = during.find((d) => d.tenant === "globex" && d.period.length === 7)!;
    expect(month.real, JSON.stringify(month)).toBe(false);

    await server!.stop("SIGTERM"); // flushes the last second
    server = null;
    await drainClosedMinutes({ db, redis }, { nowMs: Date.now() + 180_000 });
    const usage = await db.quotaUsage.findFirst({ where: { tenant: "globex", period: month.period } });
    const counter = Number(await redis.get(`${keys.quota("globex", month.quotaId, prefix)}:${month.period}`));
    // Units: 2 per passed order, 1 per search (before: QuotaUsage counted 1 per decision).
    expect(Number(usage!.used)).toBe(counter);
    expect(counter).toBeGreaterThanOrEqual(5 * 2 + 3);
    const settled = await reconcileQuotas(db, redis, { nowMs: Date.now(), prefix, settleMs: 0 });
    for (const d of settled) expect(d, `${d.tenant} ${d.quotaId}`).toMatchObject({ difference: 0, real: false });
    // The anchored tenant is compared in its own month: the counter's label, the rollup's row.
    const acme = settled.find((d) => d.tenant === "acme" && d.period.includes("@"))!;
    expect(acme).toMatchObject({ redis: 4, postgres: 4, difference: 0, real: false });
    expect(acme.period).toMatch(/^\d{4}-\d{2}-15@America\/Los_Angeles$/);
    expect(settled.filter((d) => d.tenant === "acme" && !d.period.includes("@"))).toEqual([]);

    // A counter that really differs (here: raised by hand) is reported.
    await redis.incrby(`${keys.quota("globex", month.quotaId, prefix)}:${month.period}`, 7);
    const off = (await reconcileQuotas(db, redis, { nowMs: Date.now(), prefix, settleMs: 0 })).find((d) => d.tenant === "globex" && d.quotaId === month.quotaId)!;
    expect(off).toMatchObject({ difference: 7, real: true });
  }, 120_000);
});
