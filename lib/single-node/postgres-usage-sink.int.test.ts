/**
 * The single-node usage sink against real PostgreSQL (no Redis): closed minutes are written once,
 * into the same rows the worker's rollup writes, late decisions of a written minute are added once,
 * a busy rollup lock only delays a slice, and a clean close writes the open minute too.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "../../test/helpers";
import { type Db } from "../db/client";
import { fixturePolicyFile } from "../decision/testing/fixture";
import { applyPolicyFile } from "../services/policy/apply-policy-file";
import { publishPolicy } from "../services/policy/publish-policy";
import { getUsage } from "../services/observe/usage-query";
import { type UsageEvent } from "../redis/usage";
import { minuteStartMs } from "../redis/usage-format";
import { GRACE_MS, PostgresUsageSink } from "./postgres-usage-sink";

let fresh: FreshDatabase;
let db: Db;

beforeAll(async () => {
  fresh = await freshDatabase();
  db = fresh.db;
  // The fixture's `quota` tier has a monthly quota of 3 on `*`; publishing without Redis is part of the mode.
  await applyPolicyFile(db, fixturePolicyFile(), { actor: "test" });
  const published = await publishPolicy({ db, redis: null }, { actor: "test", nowMs: Date.now() - 3_600_000 });
  expect(published.status).toBe("published");
});

afterAll(async () => {
  await fresh?.drop();
});

function event(atMs: number, outcome: UsageEvent["outcome"], deniedQuota: string | null = null): UsageEvent {
  return { atMs, tenant: "quota", tier: "quota", operation: "orders-read", outcome, keyPrefix: "abcdef012345", latencyMs: 0.4, deniedQuota };
}

async function totals(fromMs: number, toMs: number): Promise<{ allowed: number; denied: number }> {
  const usage = await getUsage(db, { from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString(), granularity: "minute", tenant: "quota" });
  return usage.points.reduce((s, p) => ({ allowed: s.allowed + p.allowed, denied: s.denied + p.denied }), { allowed: 0, denied: 0 });
}

describe("PostgresUsageSink", () => {
  it("writes each closed minute exactly once into the rollup tables, late decisions included, and the open minute on close", async () => {
    const m = minuteStartMs(Date.now()) - 10 * 60_000;
    let nowMs = m + 30_000;
    const logs: string[] = [];
    const sink = new PostgresUsageSink({ db, now: () => nowMs, log: (l) => logs.push(l) });
    const quotaId = (await db.$queryRawUnsafe<{ id: string }[]>(`SELECT "document"->'tiers'->'quota'->'quotas'->0->>'id' AS id FROM "PolicyVersion" WHERE "version" = 1`))[0]!.id;
    expect(quotaId).toMatch(/^[0-9a-f]{16}$/);

    for (let i = 0; i < 7; i++) sink.record(event(m + 1_000 + i, "allowed"));
    for (let i = 0; i < 2; i++) sink.record(event(m + 2_000 + i, "denied", quotaId));
    sink.recordError(m + 3_000, "redis_timeout");

    // Minute still open: nothing written.
    expect(await sink.flush()).toEqual({ committed: 0, waiting: 0 });
    expect(await totals(m, m + 60_000)).toEqual({ allowed: 0, denied: 0 });

    // Closed (plus the grace): one slice, the rows the usage API reads.
    nowMs = m + 60_000 + GRACE_MS + 1;
    expect(await sink.flush()).toEqual({ committed: 1, waiting: 0 });
    expect(await totals(m, m + 60_000)).toEqual({ allowed: 7, denied: 2 });
    expect(await sink.flush()).toEqual({ committed: 0, waiting: 0 });
    expect(await totals(m, m + 60_000)).toEqual({ allowed: 7, denied: 2 });

    // A late decision of the written minute: its own slice, added once.
    sink.record(event(m + 59_999, "allowed"));
    expect(await sink.flush()).toEqual({ committed: 1, waiting: 0 });
    expect(await totals(m, m + 60_000)).toEqual({ allowed: 8, denied: 2 });

    // The rollup lock held elsewhere (a worker draining): the slice waits, then goes in once.
    sink.record(event(m + 60_000 + 5, "denied"));
    nowMs = m + 120_000 + GRACE_MS + 1;
    const holder = new pg.Client({ connectionString: fresh.url });
    await holder.connect();
    await holder.query("BEGIN");
    await holder.query("SELECT pg_advisory_xact_lock(hashtext('sluice:job:rollup'))");
    expect(await sink.flush()).toEqual({ committed: 0, waiting: 1 });
    await holder.query("COMMIT");
    await holder.end();
    expect(await sink.flush()).toEqual({ committed: 1, waiting: 0 });
    expect(await totals(m, m + 120_000)).toEqual({ allowed: 8, denied: 3 });

    // The minute in progress is written by close() (a clean stop loses nothing).
    sink.record(event(nowMs, "allowed"));
    sink.record(event(nowMs + 1, "allowed"));
    expect(await sink.close()).toEqual({ committed: 1, waiting: 0 });
    expect(await totals(m, nowMs + 60_000)).toEqual({ allowed: 10, denied: 3 });

    // The same figures everywhere the rollup writes them: hour rows, tier totals, key rows, errors, quota usage.
    const hour = await getUsage(db, { from: new Date(m - 3_600_000).toISOString(), to: new Date(nowMs + 3_600_000).toISOString(), granularity: "hour", tier: "quota" });
    expect(hour.points.reduce((s, p) => s + p.allowed + p.denied, 0)).toBe(13);
    const keyRows = await db.$queryRawUnsafe<{ n: bigint }[]>(`SELECT sum("count")::bigint AS n FROM "UsageRollup" WHERE "granularity" = 'minute' AND "keyPrefix" = 'abcdef012345'`);
    expect(Number(keyRows[0]!.n)).toBe(13);
    const errors = await db.$queryRawUnsafe<{ n: bigint }[]>(`SELECT sum("count")::bigint AS n FROM "UsageRollup" WHERE "granularity" = 'minute' AND "operation" = 'error' AND "outcome" = 'redis_timeout'`);
    expect(Number(errors[0]!.n)).toBe(1);
    const quota = await db.quotaUsage.findMany({ where: { tenant: "quota" } });
    expect(quota.map((q) => [q.quotaId, Number(q.used), Number(q.denied), Number(q.quotaDenied)])).toEqual([[quotaId, 10, 3, 2]]);
    expect(await db.rollupCursor.count({ where: { sliceKey: { contains: "single-node-" } } })).toBe(4);
    expect(logs.filter((l) => l.includes("failed"))).toEqual([]);
  });
});
