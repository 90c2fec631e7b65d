/**
 * A decision server's view of the shares of `split` limits (docs/regions.md): it follows the
 * document in its region's Redis, and a document that does not validate, or one that is gone, never
 * replaces the last good one.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "@/test/helpers";
import { compilePolicy, finalizePolicy } from "../policy/compile";
import { parsePolicyFile } from "../policy/policy-file";
import { keys } from "./keys";
import { RegionSharesFollower, seedRegionShares, writeRegionShares } from "./region-shares";

let redis: Redis;
beforeAll(() => {
  process.env.SLUICE_REDIS_PREFIX = `${testRedisPrefix()}shares:`;
  redis = new Redis(testRedisUrl());
});
afterAll(() => redis?.disconnect());

function doc() {
  const parsed = parsePolicyFile({
    version: 1,
    tiers: [{ name: "free", limits: [{ operation: "*", scope: "tenant", algorithm: "fixed_window", limit: 1000, window: "1m", regions: "split" }] }],
    tenants: [{ slug: "acme", name: "Acme", tier: "free" }],
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return finalizePolicy(compilePolicy(parsed.value), 1, "2026-12-07T00:00:00.000Z");
}

const limitOf = (f: RegionSharesFollower, d: ReturnType<typeof doc>) => f.apply(d)!.tiers.free!.limits[0]!.limit;

describe("RegionSharesFollower", () => {
  it("follows the document, keeps the last good one through a bad or missing one, and says so once", async () => {
    const d = doc();
    const id = d.tiers.free!.limits[0]!.id;
    const logged: string[] = [];
    let changes = 0;
    const follower = new RegionSharesFollower({ redis, region: "eu", log: (m) => logged.push(m), onChange: () => changes++, pollMs: 50 });
    await follower.start();
    try {
      expect(limitOf(follower, d)).toBe(1000); // no document: one region, the whole limit
      expect(follower.status).toEqual({ kind: "none" });

      await seedRegionShares(redis, ["us", "eu"], 0);
      await new Promise((r) => setTimeout(r, 200));
      expect(limitOf(follower, d)).toBe(500);
      await writeRegionShares(redis, { regions: ["us", "eu"], atMs: 1, limits: { [id]: { weights: [860_000, 140_000] } } });
      await new Promise((r) => setTimeout(r, 200));
      expect(limitOf(follower, d)).toBe(140);
      expect(follower.status).toEqual({ kind: "ok", index: 1, regions: 2 });

      await redis.set(keys.regionShares(), JSON.stringify({ regions: ["us", "eu"], atMs: 2, limits: { [id]: { weights: [900_000, 900_000] } } }));
      await new Promise((r) => setTimeout(r, 200));
      await redis.set(keys.regionShares(), "{not json");
      await new Promise((r) => setTimeout(r, 200));
      await redis.del(keys.regionShares());
      await new Promise((r) => setTimeout(r, 200));
      expect(limitOf(follower, d)).toBe(140);
      expect(logged).toEqual([
        "region shares document does not validate (keeping the last good one): limits.0000000000000000.weights: weights add up to more than 1,000,000".replace("0000000000000000", id),
        "region shares document does not validate (keeping the last good one): not JSON",
      ]);
      expect(changes).toBe(2);
      // The same object while nothing changed: the engine's per-document caches stay warm.
      expect(follower.apply(d)).toBe(follower.apply(d));
    } finally {
      follower.stop();
    }
  });

  it("a region not among the document's regions enforces the least share", async () => {
    await writeRegionShares(redis, { regions: ["us", "eu"], atMs: 1, limits: {} });
    const follower = new RegionSharesFollower({ redis, region: "ap", pollMs: 50 });
    await follower.start();
    try {
      expect(limitOf(follower, doc())).toBe(1);
      expect(follower.status).toEqual({ kind: "unknown-region", regions: ["us", "eu"] });
    } finally {
      follower.stop();
    }
  });
});
