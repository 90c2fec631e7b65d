/**
 * Guarded rollouts with several regions (docs/regions.md#guarded-rollouts-in-every-region), with two
 * real Redis servers: `us` the run's Redis, `eu` a redis-server of this test's own that it kills and
 * restarts empty. A rollout's routing reaches every region's Redis at every move; a region that
 * missed one (down, restarted empty, holding an older step's routing or an ended rollout's) is
 * rewritten by the worker's guard on its next pass.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { guardRollout } from "@/lib/jobs/rollout-guard";
import { startOwnRedis, type OwnRedis } from "@/lib/processes/redis-server";
import { keys } from "@/lib/redis/keys";
import { closeRegionClients } from "@/lib/redis/regions";
import { readRolloutRouting } from "@/lib/redis/rollout";
import { applyPolicyFile } from "../policy/apply-policy-file";
import { publishPolicy } from "../policy/publish-policy";
import { changeRollout } from "./control-rollout";
import { startRollout } from "./start-rollout";

const DEMO = readFileSync(path.resolve(import.meta.dirname, "../../../examples/demo-policy.yaml"), "utf8");
const CUT = DEMO.replace("scope: api_key, algorithm: sliding_window_counter, limit: 100, window: 1m", "scope: api_key, algorithm: sliding_window_counter, limit: 50, window: 1m");
const actor = "test:rollout-regions";
const MIN = 60_000;
const T0 = Date.UTC(2026, 11, 7, 10, 0, 10);

let fresh: FreshDatabase;
let db: PrismaClient;
let home: Redis;
let euServer: OwnRedis;
let eu: Redis;

/** The routing each region holds: its step, or null. */
async function steps(): Promise<{ us: number | null; eu: number | null }> {
  const step = async (r: Redis) => {
    const read = await readRolloutRouting(r);
    return read.status === "ok" ? read.routing.step : null;
  };
  return { us: await step(home), eu: await step(eu) };
}

beforeAll(async () => {
  process.env.SLUICE_REDIS_PREFIX = `${testRedisPrefix()}ro-regions:`;
  fresh = await freshDatabase();
  db = fresh.db;
  euServer = await startOwnRedis();
  home = new Redis(testRedisUrl());
  eu = new Redis(euServer.url, { maxRetriesPerRequest: 1 });
  eu.on("error", () => undefined);
  process.env.SLUICE_REGIONS = `us=${testRedisUrl()},eu=${euServer.url}`;
  await applyPolicyFile(db, DEMO, { actor });
  await publishPolicy({ db, redis: home }, { actor, nowMs: T0 - 10 * MIN });
  await applyPolicyFile(db, CUT, { actor });
});
afterAll(async () => {
  delete process.env.SLUICE_REGIONS;
  await closeRegionClients();
  await fresh?.drop();
  home?.disconnect();
  eu?.disconnect();
  await euServer?.stop();
});

describe("a guarded rollout across regions", () => {
  it("routes every region at every step; the guard rewrites a region that missed a step or the end", async () => {
    const started = await startRollout({ db, redis: home }, { canaries: ["acme"], steps: ["10%:1h", "100%"] }, { actor, nowMs: T0 });
    if (started.status !== "started") throw new Error(started.status);
    expect(await steps()).toEqual({ us: 0, eu: 0 });
    // The candidate document sits next to the live one in both.
    expect(JSON.parse((await eu.get(keys.policyVersion(2)))!)).toMatchObject({ version: 2 });
    const stepZero = await eu.get(keys.policyRollout());

    // eu down: the promotion reaches us, eu is recorded as behind.
    await euServer.kill();
    await changeRollout({ db, redis: home }, "promote", { actor, nowMs: T0 + MIN });
    expect(await readRolloutRouting(home)).toMatchObject({ status: "ok", routing: { step: 1 } });
    expect((await db.regionBehind.findMany()).map((r) => r.region)).toEqual(["eu"]);

    // Back, empty: the guard's next pass writes the current step's routing and the candidate there.
    await euServer.start();
    const guarded = await guardRollout({ db, redis: home }, { nowMs: T0 + 2 * MIN });
    expect(guarded?.action).toBe("rerouted");
    expect(await steps()).toEqual({ us: 1, eu: 1 });
    expect(JSON.parse((await eu.get(keys.policyVersion(2)))!)).toMatchObject({ version: 2 });

    // A region holding an older step's routing is rewritten too; one that holds the current one is left alone.
    await eu.set(keys.policyRollout(), stepZero!);
    expect(await steps()).toEqual({ us: 1, eu: 0 });
    expect((await guardRollout({ db, redis: home }, { nowMs: T0 + 2 * MIN }))?.action).toBe("rerouted");
    expect(await steps()).toEqual({ us: 1, eu: 1 });
    expect((await guardRollout({ db, redis: home }, { nowMs: T0 + 2 * MIN }))?.action).toBe("none");

    // Aborted: every region back on the live version.
    await changeRollout({ db, redis: home }, "abort", { actor, nowMs: T0 + 3 * MIN });
    expect(await steps()).toEqual({ us: null, eu: null });
    // A region that missed the end (it still routes the ended rollout) is sent back by the guard.
    await eu.set(keys.policyRollout(), stepZero!);
    expect(await guardRollout({ db, redis: home }, { nowMs: T0 + 4 * MIN })).toBeNull();
    expect(await steps()).toEqual({ us: null, eu: null });
  }, 60_000);
});
