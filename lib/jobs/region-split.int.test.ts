/**
 * `regions: split` end to end (docs/regions.md#split-each-region-its-share): two regions, each with
 * its own Redis (`us` the run's, `eu` a redis-server of this test's own) and its own decision
 * server, one split limit of 100 per 4 s window. Skewed traffic (90 % in us) is driven in bursts
 * aligned to the window: the regions together never admit more than the limit in a window, the
 * worker's re-balance moves the shares toward demand (lowering eu at once, raising us only after the
 * settle time), and the under-admission before and after is measured.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, testRedisPrefix, testRedisUrl, type FreshDatabase } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { spawnDecisionServer, type SpawnedServer } from "@/lib/decision/harness";
import { startOwnRedis, type OwnRedis } from "@/lib/net/redis-server";
import { readRegionShares } from "@/lib/redis/region-shares";
import { closeRegionClients, regionTargets } from "@/lib/redis/regions";
import { applyPolicyFile } from "@/lib/services/apply-policy-file";
import { publishPolicy } from "@/lib/services/publish-policy";
import { newRebalanceMemory, rebalanceRegions } from "./region-rebalance";

const TOKEN = "svc_regions_split_0001";
const KEY = "sk_test_regions_split_0001";
const LIMIT = 100;
const WINDOW_MS = 4_000;
const POLICY = `
version: 1
operations:
  - { name: orders, match: ["GET /v1/orders"] }
tiers:
  - name: free
    limits:
      - { operation: "*", scope: tenant, algorithm: fixed_window, limit: ${LIMIT}, window: 4s, regions: split }
tenants:
  - { slug: acme, name: Acme, tier: free, keys: [{ name: main, key: ${KEY} }] }
`;

let fresh: FreshDatabase;
let db: PrismaClient;
let home: Redis;
let euRedis: OwnRedis;
const servers: Record<"us" | "eu", SpawnedServer | undefined> = { us: undefined, eu: undefined };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `n` checks at once against one region's decision server: how many it admitted, and the limit it named. */
async function burst(region: "us" | "eu", n: number): Promise<{ admitted: number; limit: number }> {
  const answers = await Promise.all(
    Array.from({ length: n }, async () => {
      const res = await fetch(`${servers[region]!.url}/v1/check`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ key: KEY, operation: "GET /v1/orders" }),
        signal: AbortSignal.timeout(10_000),
      });
      return (await res.json()) as { allowed: boolean; limit: number };
    }),
  );
  return { admitted: answers.filter((a) => a.allowed).length, limit: Math.max(...answers.map((a) => a.limit)) };
}

/** One window's traffic in both regions, starting just after a window boundary. */
async function round(us: number, eu: number) {
  await sleep(WINDOW_MS - (Date.now() % WINDOW_MS) + 100);
  const [a, b] = await Promise.all([burst("us", us), burst("eu", eu)]);
  return { us: a, eu: b, total: a.admitted + b.admitted };
}

async function waitForLimit(region: "us" | "eu", limit: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    await sleep(WINDOW_MS - (Date.now() % WINDOW_MS) + 50);
    if ((await burst(region, 1)).limit === limit) return;
  }
  throw new Error(`region ${region} did not enforce ${limit}`);
}

beforeAll(async () => {
  const prefix = `${testRedisPrefix()}split:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  fresh = await freshDatabase();
  db = fresh.db;
  euRedis = await startOwnRedis();
  home = new Redis(testRedisUrl());
  process.env.SLUICE_REGIONS = `us=${testRedisUrl()},eu=${euRedis.url}`;
  await applyPolicyFile(db, POLICY, { actor: "test:split" });
  await publishPolicy({ db, redis: home }, { actor: "test:split" });
  const common = { SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: TOKEN, SLUICE_DENY_CACHE: "0" };
  [servers.us, servers.eu] = await Promise.all([
    spawnDecisionServer({ ...common, REDIS_URL: testRedisUrl(), SLUICE_REGION: "us" }, { waitReady: true }),
    spawnDecisionServer({ ...common, REDIS_URL: euRedis.url, SLUICE_REGION: "eu" }, { waitReady: true }),
  ]);
}, 120_000);
afterAll(async () => {
  await Promise.all([servers.us?.stop(), servers.eu?.stop()]);
  delete process.env.SLUICE_REGIONS;
  await closeRegionClients();
  await fresh?.drop();
  home?.disconnect();
  await euRedis?.stop();
});

describe("regions: split with two regions", () => {
  it("never admits more than the limit in a window, and re-balances toward demand without ever exceeding it", async () => {
    // Demand is read from this minute's usage: keep the whole test inside one minute.
    if (Date.now() % 60_000 > 38_000) await sleep(60_000 - (Date.now() % 60_000) + 200);
    // A first round warms both servers (a cold one answered a burst slowly enough to span two windows).
    await round(90, 10);
    const rounds: { label: string; us: number; eu: number; total: number }[] = [];
    const record = (label: string, r: Awaited<ReturnType<typeof round>>) => rounds.push({ label, us: r.us.admitted, eu: r.eu.admitted, total: r.total });

    // Equal shares at first: 50 and 50.
    const equal = await round(90, 10);
    record("equal shares, 90/10 demand", equal);
    expect([equal.us.limit, equal.eu.limit]).toEqual([50, 50]);
    expect([equal.us.admitted, equal.eu.admitted]).toEqual([50, 10]);
    const overload = await round(180, 20); // twice the limit, still 90/10
    record("equal shares, 180/20", overload);
    expect(overload.total).toBeLessThanOrEqual(LIMIT);

    // The worker's pass: eu's share falls at once, us's grows only after the settle time.
    await sleep(1_500); // the decision servers flush their usage every second
    const targets = regionTargets(home);
    const memory = newRebalanceMemory();
    const first = await rebalanceRegions(db, targets, memory, { nowMs: Date.now() });
    expect(first.missed).toEqual([]);
    const [w] = Object.values(first.shares!.limits);
    expect(w!.weights[1]).toBeLessThan(500_000); // eu lowered
    expect(w!.weights[0]).toBe(500_000); // us not raised yet
    expect(w!.pending!.weights[0]).toBeGreaterThan(800_000);
    await waitForLimit("eu", Math.floor((LIMIT * w!.weights[1]!) / 1_000_000));
    const settling = await round(90, 10);
    record("settling: eu lowered, us not yet raised", settling);
    expect(settling.us.limit).toBe(50);
    expect(settling.total).toBeLessThanOrEqual(LIMIT);

    // After the settle time (the 4 s window plus 2 s for the servers to follow) us's share grows.
    await sleep(Math.max(0, w!.pending!.notBeforeMs - Date.now()) + 50);
    const second = await rebalanceRegions(db, targets, memory, { nowMs: Date.now() });
    const [after] = Object.values(second.shares!.limits);
    expect(after!.pending).toBeUndefined();
    const usShare = Math.floor((LIMIT * after!.weights[0]!) / 1_000_000);
    await waitForLimit("us", usShare);
    const rebalanced = await round(90, 10);
    record("re-balanced, 90/10 demand", rebalanced);
    expect(rebalanced.us.admitted).toBe(usShare);
    expect(rebalanced.total).toBeLessThanOrEqual(LIMIT);
    expect(rebalanced.total).toBeGreaterThan(equal.total); // less under-admission than with equal shares
    const overload2 = await round(180, 20);
    record("re-balanced, 180/20", overload2);
    expect(overload2.total).toBeLessThanOrEqual(LIMIT);

    // Both regions hold the same document.
    const [us, eu] = await Promise.all(targets.map((t) => readRegionShares(t.redis)));
    expect(us).toEqual(eu);
    console.log(`split, limit ${LIMIT} per ${WINDOW_MS} ms, admitted per window:\n${rounds.map((r) => `  ${r.label}: us ${r.us} + eu ${r.eu} = ${r.total}`).join("\n")}`);
  });
});
