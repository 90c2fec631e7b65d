/**
 * `regions: split` (docs/regions.md#split-each-region-its-share): the regions' shares of a limit never
 * add up to more than the limit — for any weights, and while a re-balance moves them, whichever
 * document each region holds at that moment.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compilePolicy, finalizePolicy } from "./compile";
import { parsePolicyFile } from "./policy-file";
import { planShares, splitTargets, targetWeights, MIN_DEMAND } from "./region-rebalance";
import { allocateShare, applyRegionShares, equalWeights, WEIGHT_TOTAL, type RegionShares } from "./region-shares";

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const sharesOf = (total: number, w: number[]) => w.map((_, i) => allocateShare(total, w, i));

function doc() {
  const parsed = parsePolicyFile({
    version: 1,
    operations: [{ name: "orders", match: ["GET /v1/orders"] }],
    tiers: [
      {
        name: "free",
        limits: [
          { operation: "*", scope: "tenant", algorithm: "fixed_window", limit: 1000, window: "1m", regions: "split" },
          { operation: "*", scope: "api_key", algorithm: "token_bucket", limit: 100, window: "1s", burst: 400, regions: "split" },
          { operation: "orders", scope: "tenant", algorithm: "sliding_window_log", limit: 70, window: "10s" },
        ],
      },
    ],
    globalCaps: [{ operation: "orders", limit: 50, window: "1m", regions: "split" }],
    tenants: [{ slug: "acme", name: "Acme", tier: "free", overrides: [{ operation: "*", scope: "tenant", algorithm: "fixed_window", limit: 5000 }] }],
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return finalizePolicy(compilePolicy(parsed.value), 3, "2026-12-07T00:00:00.000Z");
}

describe("allocateShare", () => {
  it("never adds up to more than the limit when every exact share is at least 1, and loses less than one unit per region", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000_000_000 }), fc.array(fc.integer({ min: 1, max: WEIGHT_TOTAL }), { minLength: 1, maxLength: 7 }), (total, raw) => {
        const scale = raw.reduce((a, b) => a + b, 0);
        const w = raw.map((x) => Math.floor((x * WEIGHT_TOTAL) / scale));
        fc.pre(w.every((x) => (total * x) / WEIGHT_TOTAL >= 1));
        const shares = sharesOf(total, w);
        expect(sum(shares)).toBeLessThanOrEqual(total);
        expect(total - sum(shares)).toBeLessThanOrEqual(w.length + (total * (WEIGHT_TOTAL - sum(w))) / WEIGHT_TOTAL);
      }),
    );
  });

  it("starts as the limit divided equally (rounded down); follows the weights; never gives less than 1", () => {
    expect(sharesOf(100, equalWeights(2))).toEqual([50, 50]);
    expect(sharesOf(100, equalWeights(3))).toEqual([33, 33, 33]);
    expect(sharesOf(100, [900_000, 100_000])).toEqual([90, 10]);
    expect(sharesOf(2, equalWeights(3))).toEqual([1, 1, 1]); // below one request a region: the one excess
  });
});

describe("applyRegionShares", () => {
  const shares: RegionShares = { regions: ["us", "eu"], atMs: 0, limits: {} };

  it("replaces every split limit, override and global cap by this region's share, and leaves local ones and the version alone", () => {
    const d = doc();
    const eu = applyRegionShares(d, shares, "eu");
    const [tenant, key, local] = eu.tiers.free!.limits;
    expect([tenant!.limit, key!.limit, key!.burst, local!.limit]).toEqual([500, 50, 200, 70]);
    expect(eu.globalCaps[0]!.limit).toBe(25);
    const o = eu.tenants.acme!.overrides[0]!;
    expect(o.kind === "limit" && o.limit.limit).toBe(2500);
    expect([eu.version, eu.checksum]).toEqual([d.version, d.checksum]);
    expect(d.tiers.free!.limits[0]!.limit).toBe(1000); // the published document is not changed
  });

  it("without a shares document (one region) enforces the whole limit; a region not in it gets the least share", () => {
    const d = doc();
    expect(applyRegionShares(d, null, "eu")).toBe(d);
    const stranger = applyRegionShares(d, shares, "ap");
    expect(stranger.tiers.free!.limits[0]!.limit).toBe(1);
  });
});

describe("planShares: moving shares never lets the regions together exceed the limit", () => {
  const d = doc();
  const targets = splitTargets(d);
  const regions = ["us", "eu", "ap"];

  it("names every split limit and global cap with its settle time", () => {
    expect(targets.map((t) => [t.tier, t.operation, t.settleMs])).toEqual([
      ["free", "*", 60_000],
      ["free", "*", 4_000], // a bucket: the time to refill 400 at 100 per second
      [null, "orders", 60_000],
    ]);
  });

  it("lowers what falls at once and raises what grows only after the settle time", () => {
    const demand = targets.map(() => [900, 50, 50]);
    const first = planShares({ regions, previous: null, targets, demand, lastWriteComplete: true, nowMs: 0, followMs: 2_000 });
    const target = targetWeights([900, 50, 50]);
    const id = targets[0]!.id;
    expect(first.limits[id]!.weights).toEqual(equalWeights(3).map((w, i) => Math.min(w, target[i]!)));
    expect(first.limits[id]!.pending).toEqual({ weights: target, notBeforeMs: 62_000 });
    const early = planShares({ regions, previous: first, targets, demand: targets.map(() => [0, 0, 0]), lastWriteComplete: true, nowMs: 61_999, followMs: 2_000 });
    expect(early.limits[id]!.weights).toEqual(first.limits[id]!.weights);
    const late = planShares({ regions, previous: early, targets, demand: targets.map(() => [0, 0, 0]), lastWriteComplete: true, nowMs: 62_000, followMs: 2_000 });
    expect(late.limits[id]).toEqual({ weights: target });
    // Not with a write that missed a region: a region may still hold larger weights.
    const held = planShares({ regions, previous: early, targets, demand: targets.map(() => [0, 0, 0]), lastWriteComplete: false, nowMs: 62_000, followMs: 2_000 });
    expect(held.limits[id]!.pending).toBeDefined();
  });

  it("below MIN_DEMAND decisions nothing moves", () => {
    const quiet = planShares({ regions, previous: null, targets, demand: targets.map(() => [MIN_DEMAND - 3, 1, 1]), lastWriteComplete: true, nowMs: 0, followMs: 0 });
    expect(quiet.limits[targets[0]!.id]).toEqual({ weights: equalWeights(3) });
  });

  it("for any demand sequence, any mix of the documents in force (each region on the last or the one before) stays within the limit", () => {
    const limit = 1000;
    fc.assert(
      fc.property(fc.array(fc.array(fc.integer({ min: 0, max: 5_000 }), { minLength: 3, maxLength: 3 }), { minLength: 1, maxLength: 12 }), fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }), (demands, complete) => {
        let previous: RegionShares | null = null;
        let nowMs = 0;
        for (const [k, demand] of demands.entries()) {
          nowMs += 30_000;
          const next = planShares({ regions, previous, targets, demand: targets.map(() => demand), lastWriteComplete: complete[k]!, nowMs, followMs: 2_000 });
          for (const t of targets) {
            const before = previous?.limits[t.id]?.weights ?? equalWeights(3);
            const after = next.limits[t.id]!.weights;
            // Each region enforces from the old or the new document: every combination is within the limit.
            for (let mask = 0; mask < 8; mask++) {
              const inForce = regions.map((_, r) => allocateShare(limit, (mask >> r) & 1 ? after : before, r));
              expect(sum(inForce)).toBeLessThanOrEqual(limit);
            }
          }
          previous = complete[k] ? next : previous ?? next;
        }
      }),
    );
  });
});
