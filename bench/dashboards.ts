/**
 * `npm run bench:dashboards` — seeds 30 days of usage rollups for 1,000 tenants into a database of
 * its own and times every query the dashboards (and the usage API) run, for 1 h / 24 h / 7 d / 30 d,
 * all tenants and one tenant. Fails (exit 1) when a query's median exceeds 500 ms.
 *
 * Seeded, as the rollup worker would have written them (lib/jobs/rollup.ts):
 *  - tenant rows: 1,000 tenants × 2 operations × 2 outcomes, hourly for 30 days (2.88 M rows),
 *    daily (aggregated from the hours), per minute for the last 24 h (1 operation, 2.88 M rows);
 *  - tier totals (`*:<tier>`) aggregated from those, at every granularity;
 *  - key-prefix rows (2 keys per tenant): daily for 30 days, hourly for 48 h, per minute for 2 h;
 *  - system rows: latency histograms and store errors, per minute for 24 h, hourly for 30 days;
 *  - a published policy with the 1,000 tenants and their quotas, and this month's quota usage.
 * Options: DATABASE_URL (server to use; default postgresql://postgres@127.0.0.1:5432/test),
 * --keep (do not drop the database), --db NAME (time an already seeded database), --runs N (default 5).
 */
import { performance } from "node:perf_hooks";
import { createDb, type Db } from "../lib/db/client";
import { errorSeries, latencyHistograms, policyMarkers, requestsByTier, topConsumers, usageSeries, type Granularity } from "../lib/db/usage-repo";
import { listAlerts } from "../lib/db/alert-repo";
import { DASHBOARD_RANGES, type DashboardRange } from "../lib/services/observe/usage-dashboard";
import { getQuotas, getTop, getUsage } from "../lib/services/observe/usage-query";
import { createTestDatabase, dropTestDatabase } from "../test/global-setup";

const TENANTS = 1_000;
const BUDGET_MS = 500;
const args = process.argv.slice(2);
const keep = args.includes("--keep");
const runs = (args.includes("--runs") && Number(args[args.indexOf("--runs") + 1])) || 5;
/** --db NAME: time the queries on an already seeded (kept) database instead of creating one. */
const existing = args.includes("--db") ? args[args.indexOf("--db") + 1] : undefined;

async function seed(db: Db, nowMs: number): Promise<void> {
  const hour = Math.floor(nowMs / 3_600_000) * 3_600_000;
  const minute = Math.floor(nowMs / 60_000) * 60_000;
  const ts = (ms: number) => `'${new Date(ms).toISOString().replace("T", " ").replace("Z", "")}'::timestamp(3)`;
  const tierOf = `(CASE WHEN i % 20 = 0 THEN 'enterprise' WHEN i % 4 = 0 THEN 'pro' ELSE 'free' END)`;
  const tenantOf = `('t' || lpad(i::text, 4, '0'))`;
  const step = async (label: string, sql: string) => {
    const t0 = performance.now();
    const n = await db.$executeRawUnsafe(sql);
    console.log(`  seeded ${label}: ${n.toLocaleString("en-US")} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  };
  const cols = `("granularity","bucketStart","tenant","tier","operation","outcome","keyPrefix","count")`;
  await step(
    "tenant hours (30 d)",
    `INSERT INTO "UsageRollup" ${cols}
     SELECT 'hour', ${ts(hour)} - h * interval '1 hour', ${tenantOf}, ${tierOf}, op, oc,
            '', CASE WHEN oc = 'allowed' THEN 20 + (i * 7 + h * 13) % 200 ELSE (i * 3 + h * 5) % 20 END
       FROM generate_series(0, 719) h, generate_series(0, ${TENANTS - 1}) i,
            (VALUES ('read'), ('write')) o(op), (VALUES ('allowed'), ('denied')) c(oc)`,
  );
  await step(
    "tenant days",
    `INSERT INTO "UsageRollup" ${cols}
     SELECT 'day', date_trunc('day', "bucketStart"), "tenant", max("tier"), "operation", "outcome", '', sum("count")
       FROM "UsageRollup" WHERE "granularity" = 'hour' GROUP BY 2, 3, 5, 6`,
  );
  await step(
    "tenant minutes (24 h)",
    `INSERT INTO "UsageRollup" ${cols}
     SELECT 'minute', ${ts(minute)} - m * interval '1 minute', ${tenantOf}, ${tierOf}, 'read', oc,
            '', CASE WHEN oc = 'allowed' THEN 1 + (i + m) % 9 ELSE (i + m) % 3 END
       FROM generate_series(0, 1439) m, generate_series(0, ${TENANTS - 1}) i, (VALUES ('allowed'), ('denied')) c(oc)`,
  );
  await step(
    "tier totals",
    `INSERT INTO "UsageRollup" ${cols}
     SELECT "granularity", "bucketStart", '*:' || "tier", "tier", "operation", "outcome", '', sum("count")
       FROM "UsageRollup" WHERE "keyPrefix" = '' GROUP BY 1, 2, 4, 5, 6`,
  );
  for (const [g, n, unit] of [["day", 29, "day"], ["hour", 47, "hour"], ["minute", 119, "minute"]] as const) {
    const start = g === "day" ? Math.floor(nowMs / 86_400_000) * 86_400_000 : g === "hour" ? hour : minute;
    await step(
      `key-prefix ${g}s`,
      `INSERT INTO "UsageRollup" ${cols}
       SELECT '${g}', ${ts(start)} - s * interval '1 ${unit}', ${tenantOf}, ${tierOf}, '', oc,
              ${tenantOf} || 'k' || k, CASE WHEN oc = 'allowed' THEN 10 + (i * 11 + s) % 300 ELSE (i + s) % 30 END
         FROM generate_series(0, ${n}) s, generate_series(0, ${TENANTS - 1}) i, generate_series(0, 1) k, (VALUES ('allowed'), ('denied')) c(oc)`,
    );
  }
  for (const [g, n, unit] of [["minute", 1439, "minute"], ["hour", 719, "hour"]] as const) {
    await step(
      `system ${g}s`,
      `INSERT INTO "UsageRollup" ${cols}
       SELECT '${g}', ${ts(g === "hour" ? hour : minute)} - s * interval '1 ${unit}', '', '', op, b::text, '', 1 + (s * 7 + b) % 50
         FROM generate_series(0, ${n}) s, generate_series(0, 12) b, (VALUES ('latency:allowed'), ('latency:denied')) o(op)
       UNION ALL
       SELECT '${g}', ${ts(g === "hour" ? hour : minute)} - s * interval '1 ${unit}', '', '', 'error', e, '', s % 3
         FROM generate_series(0, ${n}) s, (VALUES ('redis_error'), ('redis_timeout'), ('breaker_open')) x(e)`,
    );
  }
  const tiers = { free: 100_000, pro: 1_000_000, enterprise: 10_000_000 };
  const doc = {
    tiers: Object.fromEntries(Object.entries(tiers).map(([name, limit]) => [name, { name, quotas: [{ id: `q_${name}`, operation: "*", period: "month", limit, overage: name === "free" ? "block" : "bill" }] }])),
    tenants: Object.fromEntries(
      Array.from({ length: TENANTS }, (_, i) => {
        const slug = `t${String(i).padStart(4, "0")}`;
        const tier = i % 20 === 0 ? "enterprise" : i % 4 === 0 ? "pro" : "free";
        return [slug, { slug, name: `Tenant ${i}`, tier, overrides: [] }];
      }),
    ),
  };
  for (let v = 1; v <= 5; v++) {
    await db.policyVersion.create({ data: { version: v, document: doc, checksum: `bench${v}`, author: "bench", createdAt: new Date(nowMs - (6 - v) * 5 * 86_400_000) } });
  }
  const month = new Date(nowMs).toISOString().slice(0, 7);
  await step(
    "quota usage",
    `INSERT INTO "QuotaUsage" ("tenant","quotaId","period","used","denied","updatedAt")
     SELECT ${tenantOf}, 'q_' || ${tierOf}, '${month}', 1000 + (i * 7919) % 150000, i % 100, now() FROM generate_series(0, ${TENANTS - 1}) i`,
  );
  const t0 = performance.now();
  await db.$executeRawUnsafe(`VACUUM ANALYZE "UsageRollup"`);
  console.log(`  vacuum analyze in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

interface Result {
  query: string;
  medianMs: number;
  maxMs: number;
}

async function time(label: string, fn: () => Promise<unknown>): Promise<Result> {
  const samples: number[] = [];
  await fn(); // warm the plan and the cache once; then measure
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return { query: label, medianMs: samples[Math.floor(samples.length / 2)]!, maxMs: samples[samples.length - 1]! };
}

async function main(): Promise<void> {
  const base = process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/test";
  const name = existing ?? `sluice_bench_${Date.now()}`;
  let url: string;
  if (existing) {
    const u = new URL(base);
    u.pathname = `/${existing}`;
    url = u.toString();
  } else {
    console.log(`creating database ${name}`);
    url = await createTestDatabase(base, name);
  }
  const db = createDb(url);
  // Queries are timed at the seed's clock: the newest rows are in the seed's last hour.
  const nowMs = existing ? (await db.usageRollup.aggregate({ _max: { bucketStart: true }, where: { granularity: "minute" } }))._max.bucketStart!.getTime() + 30_000 : Date.now();
  const results: Result[] = [];
  try {
    if (!existing) {
      console.log(`seeding 30 days of rollups for ${TENANTS} tenants`);
      await seed(db, nowMs);
    }
    const [{ n }] = await db.$queryRawUnsafe<{ n: bigint }[]>(`SELECT count(*)::bigint AS n FROM "UsageRollup"`);
    console.log(`  UsageRollup holds ${Number(n).toLocaleString("en-US")} rows\n`);
    const month = new Date(nowMs).toISOString().slice(0, 7);
    for (const range of Object.keys(DASHBOARD_RANGES) as DashboardRange[]) {
      const { ms, granularity } = DASHBOARD_RANGES[range];
      const size = granularity === "minute" ? 60_000 : 3_600_000;
      const toMs = Math.floor(nowMs / size) * size + size;
      const f = { fromMs: toMs - ms, toMs, granularity: granularity as Granularity };
      for (const tenant of [undefined, "t0042"]) {
        const who = tenant ? `tenant ${tenant}` : "all tenants";
        results.push(await time(`${range} decisions by outcome (${who})`, () => usageSeries(db, { ...f, tenant })));
        results.push(await time(`${range} top by requests (${who})`, () => topConsumers(db, { fromMs: f.fromMs, toMs, by: "requests", limit: 10, tenant })));
        results.push(await time(`${range} top by 429s (${who})`, () => topConsumers(db, { fromMs: f.fromMs, toMs, by: "denied", limit: 10, tenant })));
      }
      results.push(await time(`${range} requests per second by tier`, () => requestsByTier(db, f)));
      results.push(await time(`${range} latency histograms`, () => latencyHistograms(db, f)));
      results.push(await time(`${range} store errors`, () => errorSeries(db, f)));
      results.push(await time(`${range} policy markers`, () => policyMarkers(db, f)));
      results.push(await time(`${range} alerts`, () => listAlerts(db, { sinceMs: f.fromMs })));
    }
    results.push(await time(`quota burn, ${TENANTS} tenants (${month})`, () => getQuotas(db, { period: month, nowMs })));
    results.push(await time(`quota burn, one tenant`, () => getQuotas(db, { period: month, tenant: "t0042", nowMs })));
    const from = new Date(nowMs - 30 * 86_400_000).toISOString();
    const to = new Date(nowMs).toISOString();
    results.push(await time(`API /usage 30 d by day`, () => getUsage(db, { from, to, granularity: "day" })));
    results.push(await time(`API /usage 30 d by hour, tier pro`, () => getUsage(db, { from, to, granularity: "hour", tier: "pro" })));
    results.push(await time(`API /usage/top 30 d (unaligned bounds)`, () => getTop(db, { from, to, by: "requests", limit: 10 })));
  } finally {
    await db.$disconnect();
    if (!keep && !existing) await dropTestDatabase(base, name);
    else console.log(`kept database ${name}`);
  }
  const width = Math.max(...results.map((r) => r.query.length));
  console.log(`${"query".padEnd(width)}  median ms  max ms   (${runs} runs after 1 warm-up)`);
  for (const r of results) console.log(`${r.query.padEnd(width)}  ${r.medianMs.toFixed(1).padStart(9)}  ${r.maxMs.toFixed(1).padStart(6)}${r.medianMs > BUDGET_MS ? "  OVER BUDGET" : ""}`);
  const over = results.filter((r) => r.medianMs > BUDGET_MS);
  const slowest = results.reduce((a, b) => (b.medianMs > a.medianMs ? b : a));
  console.log(`\nslowest: ${slowest.query} ${slowest.medianMs.toFixed(1)} ms (budget ${BUDGET_MS} ms); ${over.length} over budget`);
  if (over.length > 0) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
