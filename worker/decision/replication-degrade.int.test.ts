/**
 * A cut link degrades `shared` to `split` of each region's last share
 * (docs/regions.md, "Degrade and heal"): two regions, each with its own Redis and decision server, one
 * NATS JetStream of this test's own (killed to cut the link), one shared fixed_window limit of 100
 * per 4 s. `us` carries 90 % of the traffic and `eu` 10 % while the link works; once it is cut, `us`
 * admits 90 and `eu` 10 per window (not 100 each), /readyz and /metrics say which share is in
 * force; once it heals, one region alone gets the whole limit again.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "@/test/helpers";
import type { SpawnedServer } from "@/lib/processes/harness";
import { startOwnRedis, type OwnRedis } from "@/lib/processes/redis-server";
import { startOwnNats, type OwnNats } from "@/lib/net/testing/nats-server";
import { closeRegionClients } from "@/lib/redis/regions";
import { applyPolicyFile } from "@/lib/services/policy/apply-policy-file";
import { publishPolicy } from "@/lib/services/policy/publish-policy";
import { SETTLE_MS } from "@/lib/regions/region-share-meter";
import { nextWindow, regionPolicy, replicationOf, sendChecks, sleep, spawnRegionServer, waitForReplication } from "@/worker/testing/regions";

const TOKEN = "svc_regions_degrade_0001";
const KEY = "sk_test_regions_degrade_0001";
const LIMIT = 100;
const WINDOW_MS = 4_000;
const POLICY = JSON.stringify(regionPolicy({ key: KEY, limit: LIMIT, windowMs: WINDOW_MS, regions: "shared" }));

type Region = "us" | "eu";
let fresh: FreshDatabase;
let nats: OwnNats;
let euRedis: OwnRedis;
let us: Redis;
const servers: Partial<Record<Region, SpawnedServer>> = {};
const url = (r: Region) => servers[r]!.url;
const replication = (r: Region) => replicationOf(url(r));
const waitForStatus = (status: string) => waitForReplication([url("us"), url("eu")], status);
/** `n` checks from one region, 10 at a time; how many were admitted. */
const send = (r: Region, n: number) => sendChecks({ url: url(r), token: TOKEN, key: KEY }, n);

const shareMetric = async (region: Region) => {
  const text = await (await fetch(`${servers[region]!.url}/metrics`)).text();
  return Number(/^sluice_region_share_ratio\{[^}]*limit="free-tenant"[^}]*\} ([\d.]+)$/m.exec(text)?.[1]);
};

beforeAll(async () => {
  const prefix = `${testRedisPrefix()}degrade:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  fresh = await freshDatabase();
  [nats, euRedis] = await Promise.all([startOwnNats(), startOwnRedis()]);
  us = new Redis(testRedisUrl());
  process.env.SLUICE_REGIONS = `us=${testRedisUrl()},eu=${euRedis.url}`;
  await applyPolicyFile(fresh.db, POLICY, { actor: "test:degrade" });
  await publishPolicy({ db: fresh.db, redis: us }, { actor: "test:degrade" });
  const start = async (region: Region, redisUrl: string) => {
    servers[region] = await spawnRegionServer({ region, redisUrl, replicationUrl: nats.url, prefix, token: TOKEN });
  };
  await Promise.all([start("us", testRedisUrl()), start("eu", euRedis.url)]);
  await waitForStatus("ok");
}, 120_000);
afterAll(async () => {
  await Promise.all(Object.values(servers).map((s) => s?.stop()));
  delete process.env.SLUICE_REGIONS;
  await closeRegionClients();
  await fresh?.drop();
  us?.disconnect();
  await Promise.all([nats?.stop(), euRedis?.stop()]);
});

describe("regions: shared with its link cut", () => {
  it("each region enforces its last share (90 % and 10 % of the limit, not the limit each), says so, and gets the whole limit back when the link heals", async () => {
    // While the link works: us carries 90 %, eu 10 % of one window's traffic (under the limit).
    await nextWindow(WINDOW_MS);
    expect(await Promise.all([send("us", 45), send("eu", 5)])).toEqual([45, 5]);
    expect(await replication("eu")).toEqual(expect.objectContaining({ status: "ok" }));
    expect(await shareMetric("eu")).toBe(1);
    // That window complete and settled, the link is cut.
    const windowEnd = Date.now() - (Date.now() % WINDOW_MS) + WINDOW_MS;
    await sleep(windowEnd + SETTLE_MS + 100 - Date.now());
    await nats.kill();
    await waitForStatus("degraded");
    expect((await replication("us")).sharesInForce).toEqual({ "free-tenant": 0.9 });
    expect((await replication("eu")).sharesInForce).toEqual({ "free-tenant": 0.1 });
    expect(await shareMetric("us")).toBe(0.9);
    expect(await shareMetric("eu")).toBe(0.1);

    // Both driven well over the limit in one window: each admits its share of it, 100 in all.
    await nextWindow(WINDOW_MS);
    const [usCut, euCut] = await Promise.all([send("us", 150), send("eu", 60)]);
    console.log(`link cut: us admitted ${usCut}, eu ${euCut} of ${LIMIT}`);
    expect(usCut).toBe(90);
    expect(euCut).toBe(10);

    // Healed: the whole shared limit again (eu alone gets all of it), and nothing says degraded.
    await nats.start();
    await waitForStatus("ok");
    expect((await replication("eu")).sharesInForce).toBeUndefined();
    expect(await shareMetric("eu")).toBe(1);
    await nextWindow(WINDOW_MS);
    const euHealed = await send("eu", 120);
    console.log(`healed: eu alone admitted ${euHealed} of ${LIMIT}`);
    expect(euHealed).toBe(LIMIT);
  }, 60_000);
});
