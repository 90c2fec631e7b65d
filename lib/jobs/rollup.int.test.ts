import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "../../test/helpers";
import { type Db } from "../db/client";
import { keys } from "../redis/keys";
import { drainClosedMinutes } from "./rollup";
import { runDrainChild } from "./testing/drain-runner";
import { emptyExpected, generateDecisions, publishTestPolicy, rng, writeDecisions, type Expected } from "./testing/fixtures";


let fresh: FreshDatabase;
let db: Db;
let redis: Redis;

beforeAll(async () => {
  fresh = await freshDatabase();
  db = fresh.db;
  redis = new Redis(testRedisUrl());
  await publishTestPolicy(db, 1, new Date(Date.UTC(2026, 0, 1)));
});

afterAll(async () => {
  await redis?.quit();
  await fresh?.drop();
});

async function totalsByTenantOutcome(granularity: string): Promise<Map<string, number>> {
  const rows = await db.$queryRawUnsafe<{ tenant: string; outcome: string; n: bigint }[]>(
    `SELECT "tenant", "outcome", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "granularity" = $1 AND "keyPrefix" = '' AND "tenant" <> '' AND "tenant" NOT LIKE '*:%'
      GROUP BY 1, 2`,
    granularity,
  );
  return new Map(rows.map((r) => [`${r.tenant}|${r.outcome}`, Number(r.n)]));
}

async function expectExact(prefix: string, expected: Expected): Promise<void> {
  for (const g of ["minute", "hour", "day"]) expect(await totalsByTenantOutcome(g), `granularity ${g}`).toEqual(expected.decisions);
  const tierTotal = await db.$queryRawUnsafe<{ n: bigint }[]>(
    `SELECT coalesce(sum("count"), 0)::bigint AS n FROM "UsageRollup" WHERE "granularity" = 'day' AND "tenant" LIKE '*:%'`,
  );
  expect(Number(tierTotal[0]!.n)).toBe(expected.total);
  const keyRows = await db.$queryRawUnsafe<{ k: string; n: bigint }[]>(
    `SELECT "tenant" || '|' || "keyPrefix" || '|' || "outcome" AS k, sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "granularity" = 'minute' AND "keyPrefix" <> '' GROUP BY 1`,
  );
  expect(new Map(keyRows.map((r) => [r.k, Number(r.n)]))).toEqual(expected.keys);
  const quota = await db.quotaUsage.findMany();
  expect(new Map(quota.map((q) => [`${q.tenant}|${q.quotaId}|${q.period}`, Number(q.used)]))).toEqual(expected.quotaUsed);
  // Denials by a quota land on that quota's row of its own period (day or month), exactly once.
  expect(expected.quotaDenied.size).toBeGreaterThan(0);
  expect(new Map(quota.filter((q) => q.quotaDenied > 0n).map((q) => [`${q.tenant}|${q.quotaId}|${q.period}`, Number(q.quotaDenied)]))).toEqual(expected.quotaDenied);
  const latency = await db.$queryRawUnsafe<{ n: bigint }[]>(
    `SELECT coalesce(sum("count"), 0)::bigint AS n FROM "UsageRollup" WHERE "granularity" = 'minute' AND "tenant" = '' AND "operation" LIKE 'latency:%'`,
  );
  expect(Number(latency[0]!.n)).toBe(expected.total);
  // Nothing left behind in Redis but the claim sequence numbers and the flush ids (both expire).
  expect(await redis.scard(keys.usageMinutes(prefix))).toBe(0);
  const left = await redis.keys(`${prefix}{u:*}:usage*`);
  expect(left.filter((k) => !k.endsWith(":usage:seq") && !k.endsWith(":usage:flushes"))).toEqual([]);
}

describe("rollup worker", () => {
  it("drains N decisions into exactly N, at every granularity, and forgets the minutes", async () => {
    const prefix = `${testRedisPrefix()}r1:`;
    const expected = emptyExpected();
    const start = Date.UTC(2026, 10, 30, 23, 50);
    await writeDecisions(redis, prefix, generateDecisions(rng(1), start, 15, 2_000), expected);
    const report = await drainClosedMinutes({ db, redis, prefix }, { nowMs: Date.now() });
    expect(report.minutes).toBe(15);
    await expectExact(prefix, expected);
    // A second run finds nothing and changes nothing.
    expect((await drainClosedMinutes({ db, redis, prefix }, { nowMs: Date.now() })).minutes).toBe(0);
    await expectExact(prefix, expected);
    await db.usageRollup.deleteMany();
    await db.quotaUsage.deleteMany();
  });

  it("counts exactly once when the worker is SIGKILLed at 20+ random points, late writes included", async () => {
    const prefix = `${testRedisPrefix()}r2:`;
    const expected = emptyExpected();
    const random = rng(42);
    const start = Date.UTC(2026, 10, 30, 23, 40);
    await writeDecisions(redis, prefix, generateDecisions(random, start, 40, 6_000), expected);
    const env = { DATABASE_URL: fresh.url, REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix };
    let kills = 0;
    let runs = 0;
    let lateWritten = false;
    for (; runs < 80; runs++) {
      // Half the kills stop exactly between two steps, half land anywhere (mid-transaction included).
      const between = random() < 0.5;
      const result = await runDrainChild(
        between && kills < 24 ? { ...env, CRASH_AT_STEP: String(1 + Math.floor(random() * 30)) } : env,
        !between && kills < 24 ? Math.floor(random() * 150) : null,
      );
      if (result.signal === "SIGKILL") kills++;
      if (kills >= 6 && !lateWritten) {
        // A decision server flushing late into minutes that were already drained (and into new ones).
        await writeDecisions(redis, prefix, generateDecisions(random, start, 40, 300), expected);
        lateWritten = true;
      }
      if (result.code === 0 && kills >= 20 && lateWritten && (await redis.scard(keys.usageMinutes(prefix))) === 0) break;
    }
    expect(kills).toBeGreaterThanOrEqual(20);
    await expectExact(prefix, expected);
  }, 300_000);
});
