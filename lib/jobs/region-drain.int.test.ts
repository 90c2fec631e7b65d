/**
 * Usage from every region (lib/jobs/region-drain.ts), with two real Redis servers: `us` the run's
 * Redis, `eu` a redis-server of this test's own. Each holds its own region's usage minutes; the
 * worker's pass drains both into PostgreSQL, exactly once; with `eu` not answering (CLIENT PAUSE: its
 * data kept) `us` is drained, `eu` is reported unreachable and drained on a later pass, nothing lost
 * and nothing counted twice.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "../../test/helpers";
import type { Db } from "../db/client";
import { startOwnRedis, type OwnRedis } from "../processes/redis-server";
import { keys } from "../redis/keys";
import { closeRegionClients } from "../redis/regions";
import { drainEveryRegion, OWN_REDIS } from "./region-drain";
import { emptyExpected, generateDecisions, publishTestPolicy, rng, writeDecisions, type Expected } from "./testing/fixtures";

let fresh: FreshDatabase;
let db: Db;
let home: Redis;
let euServer: OwnRedis;
let eu: Redis;
let control: Redis;
const prefix = `${testRedisPrefix()}drain:`;

beforeAll(async () => {
  fresh = await freshDatabase();
  db = fresh.db;
  euServer = await startOwnRedis();
  home = new Redis(testRedisUrl());
  eu = new Redis(euServer.url);
  control = new Redis(euServer.url);
  process.env.SLUICE_REGIONS = `us=${testRedisUrl()},eu=${euServer.url}`;
  await publishTestPolicy(db, 1, new Date(Date.UTC(2026, 0, 1)));
});
afterAll(async () => {
  delete process.env.SLUICE_REGIONS;
  await closeRegionClients();
  home?.disconnect();
  eu?.disconnect();
  control?.disconnect();
  await euServer?.stop();
  await fresh?.drop();
});

async function totals(): Promise<Map<string, number>> {
  const rows = await db.$queryRawUnsafe<{ tenant: string; outcome: string; n: bigint }[]>(
    `SELECT "tenant", "outcome", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "granularity" = 'minute' AND "keyPrefix" = '' AND "tenant" <> '' AND "tenant" NOT LIKE '*:%' GROUP BY 1, 2`,
  );
  return new Map(rows.map((r) => [`${r.tenant}|${r.outcome}`, Number(r.n)]));
}
async function quotaUsed(): Promise<Map<string, number>> {
  const rows = await db.quotaUsage.findMany();
  return new Map(rows.map((q) => [`${q.tenant}|${q.quotaId}|${q.period}`, Number(q.used)]));
}
const statuses = (m: Map<string, { status: string }>) => Object.fromEntries([...m].map(([region, d]) => [region, d.status]));

describe("usage drained from every region", () => {
  it("drains each region's usage exactly once, and a region that does not answer later, with nothing lost or counted twice", async () => {
    const start = Date.UTC(2026, 10, 30, 23, 50);
    const expected: Expected = emptyExpected();
    await writeDecisions(home, prefix, generateDecisions(rng(1), start, 3, 300), expected);
    await writeDecisions(eu, prefix, generateDecisions(rng(2), start, 3, 200), expected);
    expect(expected.total).toBe(500);

    const first = await drainEveryRegion(db, home, { nowMs: Date.now(), prefix });
    expect(statuses(first)).toEqual({ us: "drained", eu: "drained", [OWN_REDIS]: "drained" });
    expect(first.get("eu")).toMatchObject({ minutes: 3 });
    expect(await totals()).toEqual(expected.decisions);
    expect(await quotaUsed()).toEqual(expected.quotaUsed);
    expect(await eu.scard(keys.usageMinutes(prefix))).toBe(0);

    // Again: nothing left anywhere, nothing counted twice.
    await drainEveryRegion(db, home, { nowMs: Date.now(), prefix });
    expect(await totals()).toEqual(expected.decisions);

    // eu stops answering, with its next minutes still in it; us is drained meanwhile.
    const later = start + 5 * 60_000;
    await writeDecisions(home, prefix, generateDecisions(rng(3), later, 2, 100), expected);
    await writeDecisions(eu, prefix, generateDecisions(rng(4), later, 2, 150), expected);
    // Every command to eu waits 3 s (longer than the probe's PROBE_TIMEOUT_MS); nothing in it is lost.
    const pausedUntil = Date.now() + 3_000;
    await control.call("CLIENT", "PAUSE", "3000", "ALL");
    const cut = await drainEveryRegion(db, home, { nowMs: Date.now(), prefix });
    expect(statuses(cut)).toEqual({ us: "drained", eu: "unreachable", [OWN_REDIS]: "drained" });
    expect(cut.get("us")).toMatchObject({ minutes: 2 });
    const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    expect(sum(await totals())).toBe(expected.total - 150);
    await new Promise((r) => setTimeout(r, Math.max(0, pausedUntil - Date.now() + 100)));

    // Back: its minutes are drained once.
    const back = await drainEveryRegion(db, home, { nowMs: Date.now(), prefix });
    expect(back.get("eu")).toMatchObject({ status: "drained", minutes: 2 });
    expect(await totals()).toEqual(expected.decisions);
    expect(await quotaUsed()).toEqual(expected.quotaUsed);
    await drainEveryRegion(db, home, { nowMs: Date.now(), prefix });
    expect(await totals()).toEqual(expected.decisions);
  }, 60_000);
});
