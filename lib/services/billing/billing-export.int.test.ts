import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "../../../test/helpers";
import { type Db } from "../../db/client";
import { keys } from "../../redis/keys";
import { closeDuePeriods } from "../../jobs/billing-close";
import { drainClosedMinutes } from "../../jobs/rollup";
import { runDrainChild } from "../../jobs/testing/drain-runner";
import { emptyExpected, publishTestPolicy, quotaDenying, rng, seedTenants, TEST_TENANTS, writeDecisions, type Decision, type Expected } from "../../jobs/testing/fixtures";
import { exportBilling } from "./billing-export";
import { sha256Hex } from "./billing-format";
import { reconcileBilling } from "./billing-reconcile";

const NOV = Date.UTC(2026, 10, 1);
const DAY = 86_400_000;
/** Umbrella moves from free to pro at this instant. */
const TIER_CHANGE = Date.UTC(2026, 10, 15);
/** After November's close (grace 1 h) — what the worker's clock says in these tests. */
const AFTER_CLOSE = Date.UTC(2026, 11, 1, 1, 30);

interface World {
  fresh: FreshDatabase;
  db: Db;
  prefix: string;
}

let redis: Redis;
const worlds: World[] = [];

/** A month of decisions on 60 distinct minutes, umbrella changing tier mid-month. Deterministic. */
function novemberTraffic(seed: number): Decision[] {
  const random = rng(seed);
  const minutes = [NOV, NOV + 13 * DAY + 3_600_000, TIER_CHANGE + 60_000, NOV + 30 * DAY - 120_000];
  while (minutes.length < 60) minutes.push(NOV + Math.floor(random() * 30 * 1_440) * 60_000);
  const tenants = Object.values(TEST_TENANTS);
  const out: Decision[] = [];
  for (let i = 0; i < 3_000; i++) {
    const minute = minutes[i < minutes.length * 4 ? i % minutes.length : Math.floor(random() * minutes.length)]!;
    const t = i < 16 ? TEST_TENANTS.umbrella! : tenants[Math.floor(random() * tenants.length)]!;
    const tier = t.slug === "umbrella" ? (minute >= TIER_CHANGE ? "pro" : "free") : t.tier;
    const r = random();
    const d: Decision = {
      atMs: minute + Math.floor(random() * 60_000),
      tenant: t.slug,
      tier,
      operation: random() < 0.6 ? "read" : "write",
      outcome: r < 0.75 ? "allowed" : r < 0.85 ? "denied" : r < 0.93 ? "shadow_denied" : "degraded",
      keyPrefix: `${t.slug.slice(0, 4)}0`.padEnd(12, "0"),
    };
    // Half the denials are a quota's, the rest a rate limit's (or 401/403): only the first are billed as denied.
    if (d.outcome === "denied" && i % 2 === 0) d.deniedQuota = quotaDenying(d.tier, d.operation);
    out.push(d);
  }
  return out;
}

async function makeWorld(name: string, decisions: Decision[], expected: Expected): Promise<World> {
  const fresh = await freshDatabase();
  const db = fresh.db;
  await seedTenants(db, { umbrella: "pro" });
  await publishTestPolicy(db, 1, new Date(Date.UTC(2026, 9, 1)));
  await publishTestPolicy(db, 2, new Date(TIER_CHANGE), { umbrella: "pro" });
  const prefix = `${testRedisPrefix()}${name}:`;
  await writeDecisions(redis, prefix, decisions, expected);
  const world = { fresh, db, prefix };
  worlds.push(world);
  return world;
}

beforeAll(() => {
  redis = new Redis(testRedisUrl());
});

afterAll(async () => {
  for (const w of worlds) {
    await w.fresh.drop();
  }
  await redis?.quit();
});

function runChild(world: World, env: Record<string, string>, killAfterMs: number | null): Promise<{ code: number | null; signal: string | null }> {
  const base = {
    DATABASE_URL: world.fresh.url,
    REDIS_URL: testRedisUrl(),
    SLUICE_REDIS_PREFIX: world.prefix,
    NOW_MS: String(AFTER_CLOSE),
    CLOSE_BILLING: "1",
    BILLING_GRACE_MS: "3600000",
  };
  return runDrainChild({ ...base, ...env }, killAfterMs);
}

function passedIn(decisions: Decision[], tenant: string): number {
  return decisions.filter((d) => d.tenant === tenant && d.outcome !== "denied").length;
}

function deniedByQuota(decisions: Decision[], tenant: string, quotaId: string): number {
  return decisions.filter((d) => d.tenant === tenant && d.deniedQuota === quotaId).length;
}

describe("billing export", () => {
  let reference: World;
  let decisions: Decision[];
  let referenceCsv: string;

  it("exports, for a month of traffic, totals equal to the decisions that passed — exactly", async () => {
    decisions = novemberTraffic(7);
    reference = await makeWorld("b1", decisions, emptyExpected());
    // While November is open the export is provisional.
    await drainClosedMinutes({ db: reference.db, redis, prefix: reference.prefix }, { nowMs: AFTER_CLOSE });
    const provisional = await exportBilling(reference.db, { period: "2026-11", format: "json" });
    expect(provisional.status).toBe("provisional");
    expect(await closeDuePeriods({ db: reference.db }, { nowMs: Date.UTC(2026, 11, 1, 0, 30), graceMs: 3_600_000 })).toEqual([]);
    expect(await closeDuePeriods({ db: reference.db }, { nowMs: AFTER_CLOSE, graceMs: 3_600_000 })).toEqual(["2026-11"]);

    const json = JSON.parse((await exportBilling(reference.db, { period: "2026-11", format: "json" })).body) as {
      status: string;
      lines: Array<{ tenant: string; quotaId: string; operation: string; used: number; denied: number; tier: string; tierHistory: Array<{ tier: string; from: string; to: string }> }>;
    };
    expect(json.status).toBe("final");
    // `denied` is the requests that quota denied — not every denial on the operations it covers.
    for (const l of json.lines) expect(l.denied, `${l.tenant} ${l.quotaId}`).toBe(deniedByQuota(decisions, l.tenant, l.quotaId));
    expect(json.lines.reduce((s, l) => s + l.denied, 0)).toBeGreaterThan(0);
    expect(json.lines.reduce((s, l) => s + l.denied, 0)).toBeLessThan(decisions.filter((d) => d.outcome === "denied").length);
    for (const t of Object.values(TEST_TENANTS)) {
      const allQuotaUsed = json.lines.filter((l) => l.tenant === t.slug && l.operation === "*").reduce((s, l) => s + l.used, 0);
      expect(allQuotaUsed, t.slug).toBe(passedIn(decisions, t.slug));
    }
    // A tenant moving tier mid-month shows both tiers, with dates.
    const umbrella = json.lines.filter((l) => l.tenant === "umbrella" && l.operation === "*");
    expect(umbrella.map((l) => l.tier).sort()).toEqual(["free", "pro"]);
    expect(umbrella[0]!.tierHistory).toEqual([
      { tier: "free", from: "2026-11-01", to: "2026-11-14" },
      { tier: "pro", from: "2026-11-15", to: "2026-11-30" },
    ]);
    const csv = await exportBilling(reference.db, { period: "2026-11", format: "csv" });
    expect(csv.body).toContain("free:2026-11-01..2026-11-14;pro:2026-11-15..2026-11-30");
    expect(csv.body.split("\r\n")[0]).toBe(
      "period,status,line_type,revision,tenant,tenant_name,tier,tier_history,quota_id,operation,quota_period,limit,overage_policy,used,overage_units,denied",
    );
    expect(csv.body).toContain('"Globex ""Corp"""');
    referenceCsv = csv.body;
  }, 120_000);

  it("exports the same bytes every time, with the checksum recorded with the period", async () => {
    for (const format of ["csv", "json", "cloudevents"] as const) {
      const a = await exportBilling(reference.db, { period: "2026-11", format });
      const b = await exportBilling(reference.db, { period: "2026-11", format });
      expect(b.body).toBe(a.body);
      expect(a.checksum).toBe(sha256Hex(a.body));
      const period = await reference.db.billingPeriod.findUniqueOrThrow({ where: { period: "2026-11" } });
      expect((period.checksums as Record<string, string>)[format]).toBe(a.checksum);
    }
    const events = JSON.parse((await exportBilling(reference.db, { period: "2026-11", format: "cloudevents" })).body) as Array<{ id: string; specversion: string }>;
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(events.every((e) => e.specversion === "1.0")).toBe(true);
  });

  it("gives the same totals and bytes when the worker is SIGKILLed at 20+ random points during rollup and close", async () => {
    const crashed = await makeWorld("b2", decisions, emptyExpected());
    const random = rng(99);
    let kills = 0;
    for (let run = 0; run < 80; run++) {
      const between = random() < 0.5;
      const result = await runChild(
        crashed,
        // Early steps, so that no single run does most of the work: at least 20 kills land
        // while minutes are still being drained or the period is still being closed.
        between && kills < 24 ? { CRASH_AT_STEP: String(1 + Math.floor(random() * 12)) } : {},
        !between && kills < 24 ? Math.floor(random() * 120) : null,
      );
      if (result.signal === "SIGKILL") kills++;
      const period = await crashed.db.billingPeriod.findUnique({ where: { period: "2026-11" } });
      if (result.code === 0 && kills >= 20 && period?.status === "closed" && (await redis.scard(keys.usageMinutes(crashed.prefix))) === 0) break;
    }
    expect(kills).toBeGreaterThanOrEqual(20);
    expect((await exportBilling(crashed.db, { period: "2026-11", format: "csv" })).body).toBe(referenceCsv);
    const report = await reconcileBilling(crashed.db, "2026-11");
    expect(report.rows.map((r) => [r.tenant, r.rollups])).toEqual(Object.keys(TEST_TENANTS).sort().map((t) => [t, passedIn(decisions, t)]));
    expect(report.ok).toBe(true);
  }, 400_000);

  it("records a late minute after the close as an adjustment line, visible in the next export", async () => {
    // 4 passed, 1 denied by acme's quota, 1 denied by a rate limit (not billed as denied).
    const late: Decision[] = Array.from({ length: 6 }, (_, i) => ({
      atMs: Date.UTC(2026, 10, 30, 23, 59, 30),
      tenant: "acme",
      tier: "free",
      operation: "read",
      outcome: i < 4 ? "allowed" : "denied",
      keyPrefix: "acme00000000",
      ...(i === 4 ? { deniedQuota: "q_free_all_m" } : {}),
    }));
    await writeDecisions(redis, reference.prefix, late, emptyExpected());
    await drainClosedMinutes({ db: reference.db, redis, prefix: reference.prefix }, { nowMs: AFTER_CLOSE + 60_000 });
    const after = await exportBilling(reference.db, { period: "2026-11", format: "csv" });
    expect(after.body).not.toBe(referenceCsv);
    // The frozen lines are untouched; the late usage is its own line.
    const lines = after.body.trim().split("\r\n");
    const usageLines = lines.filter((l) => l.includes(",usage,"));
    expect(usageLines.join("\r\n")).toBe(referenceCsv.trim().split("\r\n").filter((l) => l.includes(",usage,")).join("\r\n"));
    const adjustments = lines.filter((l) => l.includes(",adjustment,"));
    expect(adjustments).toHaveLength(1);
    expect(adjustments[0]).toMatch(/^2026-11,final,adjustment,1,acme,"Acme, Inc.",free,.*,q_free_all_m,\*,month,300,block,4,0,1$/);
    expect(after.revision).toBe(1);
    expect((await exportBilling(reference.db, { period: "2026-11", format: "csv" })).body).toBe(after.body);
    // Rollups, quota usage and export (lines + adjustment) still agree.
    expect((await reconcileBilling(reference.db, "2026-11")).ok).toBe(true);
  });
});
