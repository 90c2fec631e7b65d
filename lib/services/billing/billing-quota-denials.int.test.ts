/**
 * End to end: decisions through a real decision server process, some denied by a rate limit, some
 * by a quota (from the store and from the deny cache), 401 and 403 too → the worker's rollup → the
 * billing export. The export's `denied` is exactly the quota's denials; tenants without traffic
 * have their lines (used 0); a tenant published after the month has none; the bytes repeat.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "../../../test/helpers";
import { monthOf, monthRangeMs } from "../../db/billing-repo";
import { type Db } from "../../db/client";
import { compileFixture, writeFixturePolicy, type CompiledFixture } from "../../decision/testing/fixture";
import { spawnDecisionServer, type SpawnedServer } from "../../processes/harness";
import { closeDuePeriods, closePeriod } from "../../jobs/billing-close";
import { drainClosedMinutes } from "../../jobs/rollup";
import type { PolicyFileInput } from "../../policy/policy-file";
import { exportBilling } from "./billing-export";
import { BILLING_FORMATS } from "./billing-format";
import { reconcileBilling } from "./billing-reconcile";

const TOKEN = "svc_billing_quota_0001";
const KEYS = { a: "sk_test_meter_a_0001", b: "sk_test_meter_b_0001", idle: "sk_test_idle_0001", frozen: "sk_test_frozen_0001" } as const;

type Tenant = NonNullable<PolicyFileInput["tenants"]>[number];
const TENANTS: Record<string, Tenant> = {
  meter: { slug: "meter", name: "Meter Ltd", tier: "metered", keys: [{ name: "a", key: KEYS.a }, { name: "b", key: KEYS.b }] },
  idle: { slug: "idle", name: "Idle Co", tier: "metered", keys: [{ name: "a", key: KEYS.idle }] },
  frozen: { slug: "frozen", name: "Frozen", tier: "metered", status: "suspended", keys: [{ name: "a", key: KEYS.frozen }] },
  gone: { slug: "gone", name: "Gone GmbH", tier: "metered", keys: [] },
  late: { slug: "late", name: "Late Inc", tier: "metered", keys: [] },
};

function policyFile(tenants: string[]): PolicyFileInput {
  return {
    version: 1,
    defaults: { failureMode: "open" },
    operations: [
      { name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] },
      { name: "export", match: ["POST /v1/exports"] },
    ],
    tiers: [
      {
        name: "metered",
        weight: 1,
        limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 5, window: "1m" }],
        quotas: [
          { operation: "*", period: "month", limit: 8, overage: "block" },
          { operation: "export", period: "day", limit: 100, overage: "bill" },
        ],
      },
    ],
    globalCaps: [],
    tenants: tenants.map((slug) => TENANTS[slug]!),
  };
}

async function publish(db: Db, fixture: CompiledFixture, createdAt: Date): Promise<void> {
  await db.policyVersion.create({
    data: { version: fixture.doc.version, document: JSON.parse(JSON.stringify(fixture.doc)), checksum: fixture.doc.checksum, author: "test", createdAt },
  });
}

let fresh: FreshDatabase;
let db: Db;
let redis: Redis;
let server: SpawnedServer;
let prefix: string;
let month: string;
let live: CompiledFixture;

beforeAll(async () => {
  prefix = `${testRedisPrefix()}bq${randomBytes(3).toString("hex")}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  fresh = await freshDatabase();
  db = fresh.db;
  redis = new Redis(testRedisUrl());
  const nowMs = Date.now();
  month = monthOf(nowMs);
  // v1: `gone` exists; v2 (live now) deleted it; v3, published after the month, adds `late`.
  await publish(db, compileFixture(policyFile(["meter", "idle", "frozen", "gone"]), 1), new Date(nowMs - 2 * 3_600_000));
  live = compileFixture(policyFile(["meter", "idle", "frozen"]), 2);
  await publish(db, live, new Date(nowMs - 3_600_000));
  await publish(db, compileFixture(policyFile(["meter", "idle", "frozen", "late"]), 3), new Date(monthRangeMs(month).endMs + 86_400_000));
  await writeFixturePolicy(redis, live);
  server = await spawnDecisionServer({ REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: TOKEN, POLICY_POLL_MS: "200" }, { waitReady: true });
}, 120_000);

afterAll(async () => {
  await server?.stop().catch(() => undefined);
  await redis?.quit();
  await fresh?.drop();
});

async function ask(key: string, operation: string): Promise<{ status: number; reason: string }> {
  const res = await fetch(`${server.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ key, operation, ip: "198.51.100.7" }),
  });
  expect(res.status).toBe(200); // /v1/check answers 200 with the decision's own status in the body
  const body = (await res.json()) as { status: number; reason: string };
  return { status: body.status, reason: body.reason };
}

interface JsonLine {
  tenant: string;
  tenantName: string;
  quotaId: string;
  operation: string;
  quotaPeriod: string;
  used: number;
  denied: number;
}

describe("billing export: denied for quota, and a line for every tenant", () => {
  it("bills as denied exactly the requests a quota denied, gives idle tenants their lines, and re-exports the same bytes", async () => {
    // Stay inside one fixed rate-limit window (1 min) for the whole burst.
    while (new Date().getUTCSeconds() >= 45) await new Promise((r) => setTimeout(r, 500));
    const answers: { key: string; operation: string; status: number; reason: string }[] = [];
    const send = async (key: string, operation: string, times: number) => {
      for (let i = 0; i < times; i++) answers.push({ key, operation, ...(await ask(key, operation)) });
    };
    await send(KEYS.a, "GET /v1/orders", 7); // 5 pass, 2 refused by key a's rate limit (quota 5/8)
    await send(KEYS.b, "GET /v1/orders/1", 7); // 3 pass (quota 8/8), 4 refused by the quota (deny cache after the first)
    // Key a's rate limit still denies, but the quota is now exhausted too and frees later: Redis
    // names the quota (the check that frees last), and so does the deny cache, which never answers
    // differently from Redis (it used to say rate_limited here).
    await send(KEYS.a, "GET /v1/orders", 2);
    await send(KEYS.b, "POST /v1/exports", 2); // the month quota again, on the export day quota's operation
    await send(KEYS.frozen, "GET /v1/orders", 2); // 403 tenant_suspended
    await send("sk_test_nobody_0001", "GET /v1/orders", 1); // 401 unknown_key
    const count = (reason: string) => answers.filter((x) => x.reason === reason).length;
    expect(answers.filter((x) => x.status === 200)).toHaveLength(8);
    expect(count("rate_limited")).toBe(2);
    expect(count("quota_exhausted")).toBe(8);
    expect(count("tenant_suspended")).toBe(2);
    expect(count("unknown_key")).toBe(1);

    await server.stop("SIGTERM"); // flushes the last second of aggregates
    await drainClosedMinutes({ db, redis, prefix }, { nowMs: Date.now() + 180_000 });

    const allQuota = live.doc.tiers.metered!.quotas.find((q) => q.operation === "*")!.id;
    const exportQuota = live.doc.tiers.metered!.quotas.find((q) => q.operation === "export")!.id;
    // QuotaUsage keeps both: every denial on the quota's operations, and the quota's own.
    const row = await db.quotaUsage.findUniqueOrThrow({ where: { tenant_quotaId_period: { tenant: "meter", quotaId: allQuota, period: month } } });
    expect([Number(row.used), Number(row.denied), Number(row.quotaDenied)]).toEqual([8, 10, 8]);

    const provisional = await exportBilling(db, { period: month, format: "json" });
    expect(provisional.status).toBe("provisional");
    const lines = (JSON.parse(provisional.body) as { lines: JsonLine[] }).lines;
    const brief = lines.map((l) => [l.tenant, l.tenantName, l.quotaId, l.used, l.denied]);
    expect(brief).toEqual(
      [
        // The quota denied 8; the rate limit's 2, the 403s and the 401 are not its denials.
        ["meter", "Meter Ltd", allQuota, 8, 8],
        // Two requests on `export` were denied, but by the month quota: none by this one.
        ["meter", "Meter Ltd", exportQuota, 0, 0],
        // No traffic: used 0, one line per quota.
        ["idle", "Idle Co", allQuota, 0, 0],
        ["idle", "Idle Co", exportQuota, 0, 0],
        // Suspended: still a customer, every request 403 before any quota.
        ["frozen", "Frozen", allQuota, 0, 0],
        ["frozen", "Frozen", exportQuota, 0, 0],
        // Deleted during the month: it existed, it keeps its lines. `late` (published after the month) has none.
        ["gone", "Gone GmbH", allQuota, 0, 0],
        ["gone", "Gone GmbH", exportQuota, 0, 0],
      ].sort((x, y) => String(x[0]).localeCompare(String(y[0])) || String(x[2]).localeCompare(String(y[2]))),
    );

    // Reproducible: the same bytes on every export, provisional and final.
    for (const format of BILLING_FORMATS) {
      expect((await exportBilling(db, { period: month, format })).body).toBe((await exportBilling(db, { period: month, format })).body);
    }
    const { endMs } = monthRangeMs(month);
    expect(await closePeriod(db, month, { nowMs: endMs + 2 * 3_600_000, graceMs: 3_600_000 })).toBe(true);
    const finalCsv = await exportBilling(db, { period: month, format: "csv" });
    expect(finalCsv.status).toBe("final");
    expect((await exportBilling(db, { period: month, format: "csv" })).body).toBe(finalCsv.body);
    const csvRows = finalCsv.body.trim().split("\r\n");
    expect(csvRows).toHaveLength(1 + 8);
    expect(csvRows.find((r) => r.includes(`,meter,`) && r.includes(`,${allQuota},`))).toMatch(/,8,0,8$/);
    const finalLines = (JSON.parse((await exportBilling(db, { period: month, format: "json" })).body) as { lines: JsonLine[] }).lines;
    expect(finalLines).toEqual(lines);
    // Frozen with the quota's figure and the any-reason one apart.
    const frozenLine = await db.billingLine.findUniqueOrThrow({ where: { period_tenant_quotaId: { period: month, tenant: "meter", quotaId: allQuota } } });
    expect([Number(frozenLine.quotaDenied), Number(frozenLine.denied)]).toEqual([8, 10]);
    const report = await reconcileBilling(db, month);
    expect(report.ok).toBe(true);
    const meter = report.rows.find((r) => r.tenant === "meter")!;
    expect([meter.quotaDenials, meter.exportedDenied]).toEqual([8, 8]);

    // A quota denial counted but missing from the export (or the reverse) fails the check.
    const key = { tenant_quotaId_period: { tenant: "meter", quotaId: allQuota, period: month } };
    await db.quotaUsage.update({ where: key, data: { quotaDenied: 9n } });
    const broken = await reconcileBilling(db, month);
    expect(broken.ok).toBe(false);
    expect(broken.rows.filter((r) => !r.ok).map((r) => [r.tenant, r.quotaDenials, r.exportedDenied])).toEqual([["meter", 9, 8]]);
    await db.quotaUsage.update({ where: key, data: { quotaDenied: 8n } });
    expect((await reconcileBilling(db, month)).ok).toBe(true);
  }, 180_000);

  it("keeps exporting the old figure of lines and adjustments frozen before quota denials were recorded", async () => {
    // A month closed before the migration: quotaDenied is null on its rows (what the migration leaves).
    const old = "2026-01";
    await db.billingPeriod.create({ data: { period: old, status: "closed", closedAt: new Date(Date.UTC(2026, 1, 1, 1)), revision: 1 } });
    const line = { period: old, tenant: "meter", tenantName: "Meter Ltd", tier: "metered", tierHistory: [], operation: "*", quotaPeriod: "month", limit: 8n, overage: "block" };
    await db.billingLine.create({ data: { ...line, quotaId: "q_old", used: 8n, overageUnits: 0n, denied: 7n } });
    await db.billingLine.create({ data: { ...line, quotaId: "q_new", used: 3n, overageUnits: 0n, denied: 9n, quotaDenied: 4n } });
    await db.billingAdjustment.create({ data: { period: old, tenant: "meter", quotaId: "q_old", used: 1n, denied: 2n, revision: 1, sliceKey: "s1" } });
    const csv = (await exportBilling(db, { period: old, format: "csv" })).body.trim().split("\r\n");
    expect(csv.slice(1).map((r) => r.split(",").slice(-8).join(","))).toEqual([
      "q_new,*,month,8,block,3,0,4",
      "q_old,*,month,8,block,8,0,7",
      "q_old,*,month,8,block,1,0,2",
    ]);
    // Its denials were counted for any reason: reconciliation does not compare them.
    expect((await reconcileBilling(db, old)).rows.map((r) => r.exportedDenied)).toEqual([null]);
  });

  it("closes a month in which nobody sent a request, with a used-0 line per tenant and quota", async () => {
    const other = await freshDatabase();
    const odb = other.db;
    try {
      const v1 = compileFixture(policyFile(["meter", "idle"]), 1);
      await publish(odb, v1, new Date(Date.UTC(2026, 8, 20)));
      // Usage in September only; October has none at all.
      const quotaId = v1.doc.tiers.metered!.quotas.find((q) => q.operation === "*")!.id;
      await odb.quotaUsage.create({ data: { tenant: "meter", quotaId, period: "2026-09", used: 5n, quotaDenied: 1n } });
      expect(await closeDuePeriods({ db: odb }, { nowMs: Date.UTC(2026, 10, 1, 2), graceMs: 3_600_000 })).toEqual(["2026-09", "2026-10"]);
      const october = JSON.parse((await exportBilling(odb, { period: "2026-10", format: "json" })).body) as { status: string; lines: JsonLine[] };
      expect(october.status).toBe("final");
      const ids = v1.doc.tiers.metered!.quotas.map((q) => q.id).sort();
      expect(october.lines.map((l) => [l.tenant, l.quotaId, l.used, l.denied])).toEqual(
        ["idle", "meter"].flatMap((tenant) => ids.map((id) => [tenant, id, 0, 0])),
      );
    } finally {
      await other.drop();
    }
  });
});
