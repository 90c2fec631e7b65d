import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "@/test/helpers";
import { db } from "@/lib/db/client";
import { drainClosedMinutes } from "@/lib/jobs/rollup";
import { emptyExpected, publishTestPolicy, seedTenants, writeDecisions, type Decision } from "@/lib/jobs/testing/fixtures";
import type { DenialReason } from "@/lib/policy/denial-reasons";
import { loadDashboard } from "@/lib/services/observe/usage-dashboard";
import { getQuotas } from "@/lib/services/observe/usage-query";
import { GET as getBillingExport } from "../billing/exports/route";
import { GET as getQuotasRoute } from "../quotas/route";
import { GET as getUsage } from "./route";
import { GET as getTop } from "./top/route";

let fresh: FreshDatabase;
let redis: Redis;
const TOKENS = { admin: "sl_admin_test_0001", sre: "sl_sre_test_0001", product: "sl_product_test_0001", billing: "sl_billing_test_0001" } as const;

function decisions(atMs: number, tenant: string, tier: "free" | "pro", keyPrefix: string, outcome: Decision["outcome"], n: number): Decision[] {
  return Array.from({ length: n }, (_, i) => ({ atMs: atMs + i * 10, tenant, tier, operation: "read" as const, outcome, keyPrefix }));
}

/** The fixed dataset: hand-computed expectations below. */
const DATA: Decision[] = [
  ...decisions(Date.UTC(2026, 10, 5, 10), "acme", "free", "acmeaaaaaaaa", "allowed", 40),
  ...decisions(Date.UTC(2026, 10, 5, 10), "acme", "free", "acmeaaaaaaaa", "denied", 30),
  ...decisions(Date.UTC(2026, 10, 5, 11), "acme", "free", "acmebbbbbbbb", "allowed", 20),
  ...decisions(Date.UTC(2026, 10, 8, 9), "globex", "pro", "globexaaaaaa", "allowed", 150),
  ...decisions(Date.UTC(2026, 10, 8, 9), "globex", "pro", "globexaaaaaa", "shadow_denied", 50),
  ...decisions(Date.UTC(2026, 10, 8, 9, 1), "globex", "pro", "globexaaaaaa", "denied", 20),
  // An hour of denials only, each with the reason its answer gave (REASONS below), on 2026-11-20.
  ...Object.entries({ rate_limited: 12, quota_exhausted: 3, concurrency_limited: 2 } as const).flatMap(([reason, n]) =>
    decisions(Date.UTC(2026, 10, 20, 10), "acme", "free", "acmeaaaaaaaa", "denied", n).map((d) => ({ ...d, reason: reason as DenialReason })),
  ),
  // Denials recorded before reasons were.
  ...decisions(Date.UTC(2026, 10, 20, 10, 5), "acme", "free", "acmeaaaaaaaa", "denied", 4),
  ...decisions(Date.UTC(2026, 10, 20, 10, 1), "globex", "pro", "globexaaaaaa", "denied", 25).map((d) => ({ ...d, reason: "tenant_suspended" as const })),
  ...decisions(Date.UTC(2026, 10, 20, 10, 2), "_", "_" as "free", "_", "denied", 8).map((d) => ({ ...d, reason: "unknown_key" as const })),
];

function req(path: string, token?: string): Request {
  return new Request(`http://localhost${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
}

beforeAll(async () => {
  fresh = await freshDatabase();
  process.env.DATABASE_URL = fresh.url;
  redis = new Redis(testRedisUrl());
  await seedTenants(db());
  await publishTestPolicy(db(), 1, new Date(Date.UTC(2026, 9, 1)));
  for (const [role, token] of Object.entries(TOKENS)) {
    await db().apiToken.create({
      data: { id: `tok_${role}`, kind: "admin", name: role, hash: createHash("sha256").update(token).digest("hex"), prefix: token.slice(0, 8), role: role as "admin" },
    });
  }
  const prefix = `${testRedisPrefix()}api:`;
  await writeDecisions(redis, prefix, DATA, emptyExpected());
  await drainClosedMinutes({ db: db(), redis, prefix }, { nowMs: Date.now() });
});

afterAll(async () => {
  await redis?.quit();
  await db().$disconnect();
  await fresh?.drop();
});

describe("GET /api/v1/usage", () => {
  it("returns every decision exactly once, per bucket and outcome", async () => {
    const res = await getUsage(req("/api/v1/usage?from=2026-11-01T00:00:00Z&to=2026-11-11T00:00:00Z&granularity=day", TOKENS.sre));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { points: Array<{ t: string; allowed: number; denied: number; shadowDenied: number; degraded: number }> };
    expect(body.points).toHaveLength(10);
    const sum = (k: "allowed" | "denied" | "shadowDenied" | "degraded") => body.points.reduce((s, p) => s + p[k], 0);
    expect([sum("allowed"), sum("denied"), sum("shadowDenied"), sum("degraded")]).toEqual([210, 50, 50, 0]);
    expect(body.points[4]).toMatchObject({ t: "2026-11-05T00:00:00.000Z", allowed: 60, denied: 30 });
  });

  it("filters by tenant and by tier, at minute and hour granularity", async () => {
    const acme = (await (await getUsage(req("/api/v1/usage?from=2026-11-05T10:00:00Z&to=2026-11-05T12:00:00Z&granularity=hour&tenant=acme", TOKENS.admin))).json()) as { points: Array<{ allowed: number; denied: number }> };
    expect(acme.points.map((p) => [p.allowed, p.denied])).toEqual([[40, 30], [20, 0]]);
    const pro = (await (await getUsage(req("/api/v1/usage?from=2026-11-08T09:00:00Z&to=2026-11-08T09:03:00Z&granularity=minute&tier=pro", TOKENS.admin))).json()) as { points: Array<{ allowed: number; denied: number; shadowDenied: number }> };
    expect(pro.points.map((p) => [p.allowed, p.shadowDenied, p.denied])).toEqual([[150, 50, 0], [0, 0, 20], [0, 0, 0]]);
  });

  it("answers 400 naming the field for a bad parameter, 401 without credentials", async () => {
    const bad = await getUsage(req("/api/v1/usage?from=yesterday&to=2026-11-11T00:00:00Z&granularity=day", TOKENS.admin));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { field: string } }).error.field).toBe("from");
    const gran = await getUsage(req("/api/v1/usage?from=2026-11-01T00:00:00Z&to=2026-11-11T00:00:00Z&granularity=week", TOKENS.admin));
    expect(((await gran.json()) as { error: { field: string } }).error.field).toBe("granularity");
    const tooFine = await getUsage(req("/api/v1/usage?from=2026-10-01T00:00:00Z&to=2026-11-11T00:00:00Z&granularity=minute", TOKENS.admin));
    expect(tooFine.status).toBe(400);
    expect((await getUsage(req("/api/v1/usage?from=2026-11-01T00:00:00Z&to=2026-11-11T00:00:00Z&granularity=day"))).status).toBe(401);
    expect((await getUsage(req("/api/v1/usage?from=2026-11-01T00:00:00Z&to=2026-11-11T00:00:00Z&granularity=day", "sl_wrong"))).status).toBe(401);
  });
});

describe("GET /api/v1/usage: denials by reason", () => {
  type Answer = { points: Array<{ denied: number; deniedByReason: Record<string, number>; share429: number; denyShare: number }>; totals: { decisions: number; denied: number; deniedByReason: Record<string, number>; share429: number } };
  const usage = async (query: string) => (await (await getUsage(req(`/api/v1/usage?from=2026-11-20T10:00:00Z&to=2026-11-20T11:00:00Z&granularity=hour${query}`, TOKENS.sre))).json()) as Answer;

  it("names each denial by the decision API's reason, and the 429 share counts 429s only", async () => {
    const all = await usage("");
    expect(all.totals.deniedByReason).toEqual({
      rate_limited: 12,
      quota_exhausted: 3,
      concurrency_limited: 2,
      cost_exceeds_limit: 0,
      unknown_key: 8,
      tenant_suspended: 25,
      store_unavailable: 0,
      not_recorded: 4,
    });
    expect(all.totals).toMatchObject({ decisions: 54, denied: 54 });
    expect(all.totals.share429).toBeCloseTo(17 / 54, 10);
    expect(all.points[0]!.deniedByReason).toEqual(all.totals.deniedByReason);
    expect(all.points[0]!.denyShare).toBe(1);
    // The suspended tenant: every request denied, none of them a 429.
    const globex = await usage("&tenant=globex");
    expect(globex.totals.deniedByReason.tenant_suspended).toBe(25);
    expect(globex.totals.share429).toBe(0);
    expect((await usage("&tier=pro")).totals.share429).toBe(0);
    const acme = await usage("&tenant=acme");
    expect(acme.totals.share429).toBeCloseTo(17 / 21, 10);
    expect(acme.totals.deniedByReason).toMatchObject({ rate_limited: 12, unknown_key: 0, tenant_suspended: 0, not_recorded: 4 });
  });
});

describe("GET /api/v1/usage/top", () => {
  it("ranks tenants and key prefixes by requests and by denials, as computed by hand", async () => {
    const byRequests = (await (await getTop(req("/api/v1/usage/top?from=2026-11-01T00:00:00Z&to=2026-11-11T00:00:00Z&by=requests&limit=5", TOKENS.product))).json()) as {
      tenants: Array<{ tenant: string; requests: number; denied: number }>;
      keys: Array<{ tenant: string; keyPrefix: string; requests: number; denied: number }>;
    };
    expect(byRequests.tenants.map((t) => [t.tenant, t.requests, t.denied])).toEqual([["globex", 220, 20], ["acme", 90, 30]]);
    expect(byRequests.keys.map((k) => [k.keyPrefix, k.requests, k.denied])).toEqual([["globexaaaaaa", 220, 20], ["acmeaaaaaaaa", 70, 30], ["acmebbbbbbbb", 20, 0]]);
    const byDenied = (await (await getTop(req("/api/v1/usage/top?from=2026-11-01T00:00:00Z&to=2026-11-11T00:00:00Z&by=denied&limit=1", TOKENS.admin))).json()) as { tenants: Array<{ tenant: string }> };
    expect(byDenied.tenants.map((t) => t.tenant)).toEqual(["acme"]);
    // A range cutting through days and hours is still exact (minutes + hours + days).
    const partial = (await (await getTop(req("/api/v1/usage/top?from=2026-11-05T10:01:00Z&to=2026-11-08T09:01:00Z&by=requests&limit=5", TOKENS.admin))).json()) as { tenants: Array<{ tenant: string; requests: number }> };
    expect(partial.tenants.map((t) => [t.tenant, t.requests])).toEqual([["globex", 200], ["acme", 20]]);
  });

  it("rejects a limit out of bounds", async () => {
    const res = await getTop(req("/api/v1/usage/top?from=2026-11-01T00:00:00Z&to=2026-11-11T00:00:00Z&limit=1000", TOKENS.admin));
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { field: string } }).error.field).toBe("limit");
  });
});

describe("quotas", () => {
  it("projects usage to period end and dates the run-out, most urgent first", async () => {
    const { quotas } = await getQuotas(db(), { period: "2026-11", nowMs: Date.UTC(2026, 10, 11) });
    const globex = quotas.find((q) => q.tenant === "globex" && q.quotaId === "q_pro_all_m")!;
    // 200 passed in 10 of 30 days → 600 projected; 500 reached after 25 days.
    expect(globex).toMatchObject({ limit: 500, used: 200, remaining: 300, projected: 600, runsOutAt: "2026-11-26T00:00:00.000Z" });
    const acme = quotas.find((q) => q.tenant === "acme")!;
    expect(acme).toMatchObject({ limit: 300, used: 60, remaining: 240, projected: 180, runsOutAt: null });
    expect(quotas[0]!.tenant).toBe("globex");
  });

  it("serves /api/v1/quotas with validation", async () => {
    const res = await getQuotasRoute(req("/api/v1/quotas?period=2026-11&tenant=acme", TOKENS.billing));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { quotas: Array<{ tenant: string; used: number }> };
    expect(body.quotas.map((q) => [q.tenant, q.used])).toEqual([["acme", 60]]);
    const bad = await getQuotasRoute(req("/api/v1/quotas?period=2026-13", TOKENS.billing));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { field: string } }).error.field).toBe("period");
  });
});

describe("GET /api/v1/billing/exports", () => {
  it("lets billing and admin download, and answers 403 to product and sre", async () => {
    for (const role of ["product", "sre"] as const) {
      const res = await getBillingExport(req("/api/v1/billing/exports?period=2026-11&format=csv", TOKENS[role]));
      expect(res.status, role).toBe(403);
    }
    for (const role of ["billing", "admin"] as const) {
      const res = await getBillingExport(req("/api/v1/billing/exports?period=2026-11&format=csv", TOKENS[role]));
      expect(res.status, role).toBe(200);
      expect(res.headers.get("content-type")).toContain("text/csv");
      expect(res.headers.get("x-sluice-billing-status")).toBe("provisional");
    }
    const bad = await getBillingExport(req("/api/v1/billing/exports?period=2026-11&format=xml", TOKENS.admin));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { field: string } }).error.field).toBe("format");
  });

  it("never writes: a period before the first usage or in the future is a 404 naming the period, and no period row appears", async () => {
    const before = await db().billingPeriod.count();
    for (const period of ["1999-01", "2026-09", "2099-01"]) {
      const res = await getBillingExport(req(`/api/v1/billing/exports?period=${period}&format=csv`, TOKENS.billing));
      expect(res.status, period).toBe(404);
      const body = (await res.json()) as { error: { code: string; field: string; message: string } };
      expect(body.error).toMatchObject({ code: "not_found", field: "period" });
      expect(body.error.message).toContain(period);
    }
    // Reading the month that has usage, in every format, records nothing either.
    for (const format of ["csv", "json", "cloudevents"]) {
      expect((await getBillingExport(req(`/api/v1/billing/exports?period=2026-11&format=${format}`, TOKENS.billing))).status).toBe(200);
    }
    expect(await db().billingPeriod.count()).toBe(before);
    expect(await db().billingPeriod.findMany({ where: { period: { in: ["1999-01", "2026-09", "2099-01"] } } })).toEqual([]);
  });
});

describe("dashboard data", () => {
  it("draws the same totals, top consumers, latency percentiles and quota burn as the API", async () => {
    const d = await loadDashboard(db(), { range: "30d", nowMs: Date.UTC(2026, 10, 11) });
    expect(d.totals).toMatchObject({ decisions: 310, denied: 50, denySharePct: 16.1 });
    expect(d.topByRequests.tenants.map((t) => t.tenant)).toEqual(["globex", "acme"]);
    expect(d.topByDenied.tenants.map((t) => t.tenant)).toEqual(["acme", "globex"]);
    // Every decision was recorded at 1.5 ms: bucket ≤ 2 ms, so every percentile says 2.
    const busy = d.latency.filter((l) => l.allowP50 !== null);
    expect(busy.length).toBeGreaterThan(0);
    expect(busy.every((l) => l.allowP50 === 2 && l.allowP99 === 2)).toBe(true);
    expect(d.rpsByTier.tiers).toEqual(["free", "pro"]);
    const tenant = await loadDashboard(db(), { range: "30d", tenant: "acme", nowMs: Date.UTC(2026, 10, 11) });
    expect(tenant.totals.decisions).toBe(90);
    expect(tenant.quotas.map((q) => q.tenant)).toEqual(["acme"]);
  });
});

describe("dashboard denials by reason", () => {
  it("draws 429s, 401s, 403s and 503s as their own series, and the 429 share counts 429s only", async () => {
    const d = await loadDashboard(db(), { range: "24h", nowMs: Date.UTC(2026, 10, 20, 12) });
    expect(d.totals).toMatchObject({ decisions: 54, denied: 54, denySharePct: 100, share429Pct: 31.5 });
    expect(d.totals.byReason).toMatchObject({ rate_limited: 12, unknown_key: 8, tenant_suspended: 25, not_recorded: 4 });
    const hour = d.decisions.find((p) => p.t === Date.UTC(2026, 10, 20, 10))!;
    expect(hour).toMatchObject({ denied429: 17, denied401: 8, denied403: 25, denied503: 0, not_recorded: 4, share429Pct: 31.5, quota_exhausted: 3 });
    const suspended = await loadDashboard(db(), { range: "24h", tenant: "globex", nowMs: Date.UTC(2026, 10, 20, 12) });
    expect(suspended.totals).toMatchObject({ denied: 25, share429Pct: 0 });
  });
});

describe("tenant quota overrides", () => {
  it("project against the override's limit, not the tier's (they share the quota id)", async () => {
    await db().policyVersion.create({
      data: {
        version: 2,
        checksum: "test2",
        author: "test",
        createdAt: new Date(Date.UTC(2026, 10, 10)),
        document: {
          tiers: { free: { quotas: [{ id: "q_free_all_m", operation: "*", period: "month", limit: 300, overage: "block" }] }, pro: { quotas: [] } },
          tenants: {
            acme: { slug: "acme", name: "Acme", tier: "free", overrides: [{ kind: "quota", operation: "*", period: "month", expiresAtMs: null, quota: { id: "q_free_all_m", operation: "*", period: "month", limit: 1000, overage: "bill" } }] },
          },
        },
      },
    });
    const { quotas } = await getQuotas(db(), { period: "2026-11", tenant: "acme", nowMs: Date.UTC(2026, 10, 11) });
    expect(quotas.map((q) => [q.quotaId, q.limit, q.overage, q.used])).toEqual([["q_free_all_m", 1000, "bill", 60]]);
  });

  it("are marked in the billing CSV, and one tenant's lines export on their own", async () => {
    const res = await getBillingExport(req("/api/v1/billing/exports?period=2026-11&format=csv&tenant=acme", TOKENS.billing));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-disposition")).toContain("sluice-billing-2026-11-acme-provisional.csv");
    const [header, ...rows] = (await res.text()).trim().split("\r\n");
    const col = header!.split(",");
    // RFC 4180 fields: a quoted one may hold commas ("Acme, Inc.").
    const fields = (row: string) => [...row.matchAll(/(?:^|,)("(?:[^"]|"")*"|[^,]*)/g)].map((m) => m[1]!);
    const cell = (row: string, name: string) => fields(row)[col.indexOf(name)];
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => cell(r, "tenant") === "acme")).toBe(true);
    expect(rows.map((r) => [cell(r, "quota_id"), cell(r, "limit"), cell(r, "tenant_override")])).toEqual([["q_free_all_m", "1000", "true"]]);
    // The whole month: globex's lines are there, not overridden.
    const all = (await (await getBillingExport(req("/api/v1/billing/exports?period=2026-11&format=csv", TOKENS.billing))).text()).trim().split("\r\n");
    expect(all.filter((r) => cell(r, "tenant") === "globex").map((r) => cell(r, "tenant_override"))).toEqual(["false", "false"]);
    const unknown = await getBillingExport(req("/api/v1/billing/exports?period=2026-11&format=csv&tenant=nosuch", TOKENS.billing));
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { field: string } }).error.field).toBe("tenant");
  });
});
