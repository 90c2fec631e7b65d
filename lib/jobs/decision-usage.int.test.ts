/**
 * End to end: N decisions sent through a real decision server process appear in /api/v1/usage as
 * exactly N after the worker runs, also when the worker was SIGKILLed mid-drain.
 */
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "../../test/helpers";
import { GET as getUsageRoute } from "../../app/api/v1/usage/route";
import { db } from "../db/client";
import { compileFixture, FIXTURE_KEYS, writeFixturePolicy } from "../decision/testing/fixture";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";
import { keys } from "../redis/keys";
import { reconcileQuotas } from "./reconcile";

const ROOT = path.resolve(import.meta.dirname, "../..");
const TOKEN = "svc_usage_e2e_0001";
const ADMIN = "sl_admin_usage_e2e_0001";
let fresh: FreshDatabase;
let redis: Redis;
let server: SpawnedServer;
let prefix: string;

beforeAll(async () => {
  prefix = `${testRedisPrefix()}du${randomBytes(3).toString("hex")}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  fresh = await freshDatabase();
  process.env.DATABASE_URL = fresh.url;
  redis = new Redis(testRedisUrl());
  const fixture = compileFixture();
  await writeFixturePolicy(redis, fixture);
  await db().policyVersion.create({ data: { version: 1, document: JSON.parse(JSON.stringify(fixture.doc)), checksum: fixture.doc.checksum, author: "test", createdAt: new Date(Date.now() - 3_600_000) } });
  await db().apiToken.create({ data: { id: "tok_admin", kind: "admin", name: "admin", hash: createHash("sha256").update(ADMIN).digest("hex"), prefix: "sl_admin", role: "admin" } });
  server = await spawnDecisionServer({ REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: TOKEN, POLICY_POLL_MS: "200" }, { waitReady: true });
});

afterAll(async () => {
  await server?.stop().catch(() => undefined);
  await redis?.quit();
  await db().$disconnect();
  await fresh?.drop();
});

function runWorker(crashAtStep: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "lib/jobs/testing/drain-child.ts")], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: fresh.url, REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, NOW_MS: String(Date.now() + 180_000), CRASH_AT_STEP: String(crashAtStep) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("exit", (code, signal) => (code === 0 || signal ? resolve(signal) : reject(new Error(`worker failed: ${err}`))));
  });
}

describe("decision server → worker → usage API", () => {
  it("counts every decision exactly once, by outcome, after SIGKILLs mid-drain", async () => {
    const plan: Array<[string, string, number]> = [
      [FIXTURE_KEYS.acme, "GET /v1/orders/1", 20],
      [FIXTURE_KEYS.acme2, "GET /v1/orders/2", 20],
      [FIXTURE_KEYS.big, "GET /v1/orders", 30],
      [FIXTURE_KEYS.shadow, "GET /v1/orders", 10],
      [FIXTURE_KEYS.quota, "GET /v1/orders", 6],
      ["sk_unknown_0000", "GET /v1/orders", 4],
    ];
    const counted: Record<string, { passed: number; denied: number; shadow: number }> = {};
    /** Passed without the counter store (a Redis timeout under load, failure mode open): not on the Redis quota counter. */
    const degraded: Record<string, number> = {};
    let n = 0;
    const startedMs = Date.now();
    for (const [key, operation, times] of plan) {
      for (let i = 0; i < times; i++) {
        const res = await fetch(`${server.url}/v1/check`, {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ key, operation, ip: `198.51.100.${i}` }),
        });
        const a = (await res.json()) as { allowed: boolean; tenant?: string; shadowDenied?: boolean; degraded?: boolean };
        const tenant = a.tenant ?? "_";
        const c = (counted[tenant] ??= { passed: 0, denied: 0, shadow: 0 });
        if (!a.allowed) c.denied++;
        else if (a.shadowDenied) c.shadow++;
        else c.passed++;
        if (a.allowed && a.degraded) degraded[tenant] = (degraded[tenant] ?? 0) + 1;
        n++;
      }
    }
    expect(n).toBe(90);
    expect(counted.acme!.denied).toBeGreaterThan(0);
    await server.stop("SIGTERM"); // flushes the last second of aggregates
    // The worker dies at steps 1, 2, 3 (after claim, after commit, after release), then runs to the end.
    for (const step of [1, 2, 3, 2, 1]) await runWorker(step);
    expect(await runWorker(0)).toBeNull();
    expect(await redis.scard(keys.usageMinutes(prefix))).toBe(0);

    const from = new Date(Math.floor(startedMs / 60_000) * 60_000 - 60_000).toISOString();
    const to = new Date(Date.now() + 120_000).toISOString();
    let total = 0;
    for (const [tenant, c] of Object.entries(counted)) {
      if (tenant === "_") continue;
      const res = await getUsageRoute(new Request(`http://x/api/v1/usage?from=${from}&to=${to}&granularity=minute&tenant=${tenant}`, { headers: { authorization: `Bearer ${ADMIN}` } }));
      expect(res.status).toBe(200);
      const body = (await res.json()) as { points: Array<{ allowed: number; denied: number; shadowDenied: number; degraded: number }> };
      const sum = body.points.reduce((s, p) => ({ passed: s.passed + p.allowed + p.degraded, denied: s.denied + p.denied, shadow: s.shadow + p.shadowDenied }), { passed: 0, denied: 0, shadow: 0 });
      expect(sum, tenant).toEqual(c);
      total += sum.passed + sum.denied + sum.shadow;
    }
    const all = (await (await getUsageRoute(new Request(`http://x/api/v1/usage?from=${from}&to=${to}&granularity=hour`, { headers: { authorization: `Bearer ${ADMIN}` } }))).json()) as { points: Array<{ allowed: number; denied: number; shadowDenied: number; degraded: number }> };
    const allTotal = all.points.reduce((s, p) => s + p.allowed + p.denied + p.shadowDenied + p.degraded, 0);
    expect(allTotal).toBe(n); // unknown keys included, under tier `_`
    expect(total).toBe(n - counted._!.denied);
    // The quota tenant's monthly quota (limit 3) is kept in Postgres exactly: every passed decision.
    const quota = await db().quotaUsage.findMany({ where: { tenant: "quota" } });
    expect(quota.map((q) => Number(q.used))).toEqual([counted.quota!.passed + counted.quota!.shadow]);
    // …and agrees with the Redis quota counter the decision server enforced, but for decisions that
    // passed degraded (without Redis), which reconciliation reports as the difference.
    const diffs = await reconcileQuotas(db(), redis, { nowMs: Date.now(), prefix });
    const q = diffs.find((d) => d.tenant === "quota")!;
    expect(q.redis).toBeLessThanOrEqual(3);
    expect(q.redis).toBe(q.postgres - (degraded.quota ?? 0));
    expect(q.difference).toBe(0 - (degraded.quota ?? 0) || 0);
  }, 180_000);
});
