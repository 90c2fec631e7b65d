/**
 * Several regions (docs/regions.md), with two real Redis servers: region `us` is the run's shared
 * Redis, region `eu` a redis-server of this test's own that it kills and restarts. Every publish and
 * key change reaches both; one down, the other still takes it and the lagging one is caught up by
 * the worker's pass once it answers again; none reachable, nothing changes.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { spawnDecisionServer, spawnWorker } from "@/lib/processes/harness";
import { freePort } from "@/lib/net/ports";
import { startOwnRedis, type OwnRedis } from "@/lib/processes/redis-server";
import { keys } from "@/lib/redis/keys";
import { readCurrentVersion } from "@/lib/redis/policy";
import { closeRegionClients, regionTargets } from "@/lib/redis/regions";
import { applyPolicyFile } from "@/lib/services/policy/apply-policy-file";
import { createApiKey } from "@/lib/services/access/create-api-key";
import { ServiceError } from "@/lib/services/errors";
import { publishPolicy } from "@/lib/services/policy/publish-policy";
import { revokeApiKey } from "@/lib/services/access/revoke-api-key";
import { rollbackPolicy } from "@/lib/services/policy/rollback-policy";
import { hashSecret } from "@/lib/services/access/secrets";
import { syncRegions } from "./region-sync";

const DEMO = readFileSync(path.resolve(import.meta.dirname, "../../examples/demo-policy.yaml"), "utf8");
const actor = "test:regions";
const editor = { actor, role: "admin" } as const;

let fresh: FreshDatabase;
let db: PrismaClient;
/** The control plane's own client (REDIS_URL): the `us` region's Redis. */
let home: Redis;
let us: Redis;
let euServer: OwnRedis;
let eu: Redis;

const versions = async () => ({ us: await readCurrentVersion(us), eu: await readCurrentVersion(eu) });
/** A change to the draft, so the next publish is a new version. */
const bump = (n: number) => applyPolicyFile(db, DEMO.replace("limit: 600, window: 1m", `limit: ${600 + n}, window: 1m`), { actor });

beforeAll(async () => {
  process.env.SLUICE_REDIS_PREFIX = `${testRedisPrefix()}regions:`;
  fresh = await freshDatabase();
  db = fresh.db;
  euServer = await startOwnRedis();
  home = new Redis(testRedisUrl());
  us = new Redis(testRedisUrl());
  eu = new Redis(euServer.url, { maxRetriesPerRequest: 1 });
  eu.on("error", () => undefined);
  process.env.SLUICE_REGIONS = `us=${testRedisUrl()},eu=${euServer.url}`;
});
afterAll(async () => {
  delete process.env.SLUICE_REGIONS;
  await closeRegionClients();
  await fresh?.drop();
  home?.disconnect();
  us?.disconnect();
  eu?.disconnect();
  await euServer?.stop();
});
beforeEach(async () => {
  process.env.SLUICE_REGIONS = `us=${testRedisUrl()},eu=${euServer.url}`;
  await db.auditEntry.deleteMany();
  await db.policyVersion.deleteMany();
  await db.regionBehind.deleteMany();
  await db.tenant.deleteMany();
  await db.tier.deleteMany();
  await db.operation.deleteMany();
  await db.globalCap.deleteMany();
  const stale = await us.keys(`${process.env.SLUICE_REDIS_PREFIX}*`);
  if (stale.length) await us.del(...stale);
  await eu.flushall();
  await applyPolicyFile(db, DEMO, { actor });
});

describe("publishing to every region (SLUICE_REGIONS)", () => {
  it("a publish, a rollback and a new key reach every region's Redis", async () => {
    const first = await publishPolicy({ db, redis: home }, { actor });
    expect(first).toMatchObject({ status: "published", version: 1 });
    expect(first.regionsMissed).toBeUndefined();
    await bump(1);
    await publishPolicy({ db, redis: home }, { actor });
    expect(await versions()).toEqual({ us: 2, eu: 2 });
    const rolled = await rollbackPolicy({ db, redis: home }, { actor, toVersion: 1 });
    expect(rolled.version).toBe(3);
    expect(await versions()).toEqual({ us: 3, eu: 3 });
    // The same bytes in both.
    expect(await eu.get(keys.policyVersion(3))).toBe(await us.get(keys.policyVersion(3)));
    const key = await createApiKey({ db, redis: home }, { tenant: "acme" }, editor);
    expect(await eu.hget(keys.keyIndex(), hashSecret(key.key))).toBe("acme");
    expect(await us.hget(keys.keyIndex(), hashSecret(key.key))).toBe("acme");
    expect(await syncRegions(db, regionTargets(home))).toEqual([
      { region: "us", status: "current", versionBefore: 3, latestVersion: 3, why: [] },
      { region: "eu", status: "current", versionBefore: 3, latestVersion: 3, why: [] },
    ]);
  });

  it("with one region down a publish and a key change succeed for the other; the lagging one keeps its last version and is caught up when back", async () => {
    await publishPolicy({ db, redis: home }, { actor });
    const kept = await createApiKey({ db, redis: home }, { tenant: "acme", name: "kept" }, editor);
    await euServer.kill();

    await bump(2);
    const published = await publishPolicy({ db, redis: home }, { actor });
    expect(published).toMatchObject({ status: "published", version: 2, regionsMissed: ["eu"] });
    const added = await createApiKey({ db, redis: home }, { tenant: "acme", name: "added" }, editor);
    await revokeApiKey({ db, redis: home }, { tenant: "acme", name: "kept" }, editor);
    expect(await readCurrentVersion(us)).toBe(2);
    expect(await us.hget(keys.keyIndex(), hashSecret(added.key))).toBe("acme");
    expect(await us.hexists(keys.keyIndex(), hashSecret(kept.key))).toBe(0);
    expect((await db.regionBehind.findMany()).map((r) => r.region)).toEqual(["eu"]);

    // Still down: the pass says so and changes nothing.
    const down = await syncRegions(db, regionTargets(home));
    expect(down.map((r) => [r.region, r.status])).toEqual([["us", "current"], ["eu", "unreachable"]]);

    // Back (empty: no persistence): the next pass writes the latest state there.
    await euServer.start();
    const back = await syncRegions(db, regionTargets(home));
    expect(back.map((r) => [r.region, r.status])).toEqual([["us", "current"], ["eu", "caught-up"]]);
    expect(await versions()).toEqual({ us: 2, eu: 2 });
    // Postgres's jsonb keeps the fields in its own order: the same document, compared parsed.
    expect(JSON.parse((await eu.get(keys.policyVersion(2)))!)).toEqual(JSON.parse((await us.get(keys.policyVersion(2)))!));
    expect(await eu.hget(keys.keyIndex(), hashSecret(added.key))).toBe("acme");
    expect(await eu.hexists(keys.keyIndex(), hashSecret(kept.key))).toBe(0);
    expect(await db.regionBehind.count()).toBe(0);
    expect((await syncRegions(db, regionTargets(home))).map((r) => r.status)).toEqual(["current", "current"]);
  });

  it("a decision server in the lagging region keeps its last good version, names its region in /healthz, /readyz, /metrics and its start-up line, and follows the catch-up", async () => {
    await publishPolicy({ db, redis: home }, { actor });
    const server = await spawnDecisionServer({ REDIS_URL: euServer.url, SLUICE_REDIS_PREFIX: process.env.SLUICE_REDIS_PREFIX!, SLUICE_REGION: "eu", POLICY_POLL_MS: "200" }, { waitReady: true });
    const readyz = async () => (await (await fetch(`${server.url}/readyz`)).json()) as Record<string, unknown>;
    try {
      expect(server.output()).toMatch(/decision server listening on :\d+.*region eu; .*policy v1/);
      expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ ok: true, region: "eu" });
      expect(await readyz()).toMatchObject({ region: "eu", ready: true, policyVersion: 1 });
      expect(await (await fetch(`${server.url}/metrics`)).text()).toMatch(/^sluice_policy_version\{region="eu"\} 1$/m);

      await euServer.kill();
      await bump(4);
      expect((await publishPolicy({ db, redis: home }, { actor })).regionsMissed).toEqual(["eu"]);
      await euServer.start(); // back empty
      await new Promise((r) => setTimeout(r, 500));
      // Its Redis lost everything: the server keeps answering with its last good copy, and says what is missing.
      expect(await readyz()).toMatchObject({ region: "eu", policyVersion: 1, missing: expect.arrayContaining(["policy"]) });

      await syncRegions(db, regionTargets(home));
      const deadline = Date.now() + 10_000;
      while ((await readyz()).policyVersion !== 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await readyz()).toMatchObject({ region: "eu", ready: true, policyVersion: 2, missing: [] });
    } finally {
      await server.stop();
    }
  });

  it("the worker process (npm run worker) catches a lagging region up by itself within seconds of it answering again", async () => {
    await publishPolicy({ db, redis: home }, { actor });
    await euServer.kill();
    await bump(5);
    expect((await publishPolicy({ db, redis: home }, { actor })).regionsMissed).toEqual(["eu"]);
    const worker = await spawnWorker({
      DATABASE_URL: fresh.url,
      REDIS_URL: testRedisUrl(),
      SLUICE_REDIS_PREFIX: process.env.SLUICE_REDIS_PREFIX!,
      SLUICE_REGIONS: process.env.SLUICE_REGIONS!,
    });
    try {
      await euServer.start();
      const deadline = Date.now() + 15_000;
      while ((await readCurrentVersion(eu).catch(() => null)) !== 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      expect(await versions()).toEqual({ us: 2, eu: 2 });
      while (!/region eu was behind; wrote v2 there/.test(worker.output()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(worker.output()).toMatch(/region eu was behind; wrote v2 there/);
    } finally {
      await worker.stop();
    }
  });

  it("a region that missed only a key revocation (same version) is caught up too: the key stops working there", async () => {
    await publishPolicy({ db, redis: home }, { actor });
    const key = await createApiKey({ db, redis: home }, { tenant: "acme", name: "leaked" }, editor);
    // A region that was reachable but holds a stale index (it missed the revocation while it was
    // cut off, and came back with its data): recorded as behind by the revocation.
    await euServer.kill();
    await revokeApiKey({ db, redis: home }, { tenant: "acme", name: "leaked" }, editor);
    await euServer.start();
    await eu.set(keys.policyCurrent(), "1"); // as it was before the cut: version 1 …
    await eu.hset(keys.keyIndex(), hashSecret(key.key), "acme"); // … and the leaked key
    const [, euResult] = await syncRegions(db, regionTargets(home));
    expect(euResult).toMatchObject({ region: "eu", status: "caught-up", why: expect.arrayContaining(["missed: removing the key from the index"]) });
    expect(await eu.hexists(keys.keyIndex(), hashSecret(key.key))).toBe(0);
  });

  it("with no region reachable a publish fails with store_unavailable and nothing changes", async () => {
    await publishPolicy({ db, redis: home }, { actor });
    await euServer.kill();
    process.env.SLUICE_REGIONS = `us=redis://127.0.0.1:${await freePort()},eu=${euServer.url}`;
    await bump(3);
    const failed = await publishPolicy({ db, redis: home }, { actor }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ServiceError);
    expect((failed as ServiceError).code).toBe("store_unavailable");
    expect((failed as ServiceError).message).toMatch(/no region's Redis is available/);
    expect(await db.policyVersion.count()).toBe(1);
    expect(await db.regionBehind.count()).toBe(0);
    await euServer.start();
  });
});
