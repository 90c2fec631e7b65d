/**
 * A partial cut (lib/regions/region-liveness.ts, lib/policy/region-shares.ts sharesLeft): a region the
 * others stop hearing from is given up at the share it takes with it, measured as of when it was
 * last heard from; the regions still linked enforce the rest; heard from again, the whole limit.
 */
import { describe, expect, it } from "vitest";
import { counterKeys } from "../policy/counter-keys";
import { degradedLimit, sharesLeft } from "../policy/region-shares";
import { PeerLiveness, type PeerLook } from "./region-liveness";
import { FLOOR_OF_EQUAL, RegionShareMeter, SETTLE_MS } from "./region-share-meter";
import { replicatedWindow, type ReplicatedUnits } from "./replication";
import type { LimitCheck } from "../store/types";
import { replicatedCheck } from "./testing/checks";

const ID = "0123456789abcdef";
const OTHER = "aaaaaaaaaaaaaaaa";
const check = (id = ID): LimitCheck => replicatedCheck(counterKeys.counter("acme", id, "_", "sl:"));
const units = (nowMs: number, n: number, id = ID): ReplicatedUnits => ({ ...replicatedWindow(check(id), nowMs)!, units: n });
const REGIONS = ["us", "eu", "ap"];

/** us's meter: in the window 0–4 s us admitted 40, eu 40, ap 20; in 4–8 s (after eu's cut at 5 s) us 50 and ap 50 only. */
function meter(): RegionShareMeter {
  const m = new RegionShareMeter();
  m.record([units(1_000, 40)], null);
  m.record([units(1_000, 40)], "eu");
  m.record([units(1_000, 20)], "ap");
  m.record([units(4_500, 50)], null);
  m.record([units(4_500, 50)], "ap");
  return m;
}
const look = (nowMs: number, heard: Record<string, number>, linkedForMs: number | null = 60_000): PeerLook => ({ nowMs, heardMs: new Map(Object.entries(heard)), linkedForMs, regions: REGIONS });

describe("another region's share as this region measured it", () => {
  it("is its units ÷ every region's over the last window settled when it was last heard from", () => {
    const m = meter();
    // Heard from until 5.5 s: the window 0–4 s had settled (4 s + SETTLE_MS) by then.
    expect(m.measuredOf("eu", ID, 5_500)).toBeCloseTo(0.4);
    expect(m.snapshotOf("eu", 5_500, 20_000, 3).ratios.get(ID)).toBeCloseTo(0.4);
    // Later windows hold none of its units: measured as of later, it would look like it took nothing.
    expect(m.measuredOf("eu", ID, 8_000 + SETTLE_MS)).toBe(0);
    expect(m.snapshotOf("eu", 8_000 + SETTLE_MS, 20_000, 3).ratios.get(ID)).toBeCloseTo(FLOOR_OF_EQUAL / 3);
    expect(m.measuredOf("eu", OTHER, 5_500)).toBeNull();
  });
});

describe("the shares left to the regions still linked", () => {
  it("are 1 − the silent regions' shares per limit (their `otherwise` where they measured none), never below the floor", () => {
    const eu = { ratios: new Map([[ID, 0.4]]), otherwise: 1 / 3, sinceMs: 0 };
    const ap = { ratios: new Map([[OTHER, 0.5]]), otherwise: 1 / 3, sinceMs: 0 };
    const one = sharesLeft([eu], 0.03, 7)!;
    expect(one.ratios.get(ID)).toBeCloseTo(0.6);
    expect(one.otherwise).toBeCloseTo(2 / 3);
    expect(one.sinceMs).toBe(7);
    const two = sharesLeft([eu, ap], 0.03, 7)!;
    expect(two.ratios.get(ID)).toBeCloseTo(1 - 0.4 - 1 / 3);
    expect(two.ratios.get(OTHER)).toBeCloseTo(1 - 1 / 3 - 0.5);
    expect(sharesLeft([{ ratios: new Map([[ID, 0.99]]), otherwise: 1, sinceMs: 0 }], 0.03, 0)!.ratios.get(ID)).toBe(0.03);
    expect(sharesLeft([], 0.03, 0)).toBeNull();
  });

  it("add up with what the silent region enforces to at most the limit", () => {
    for (const [limit, share] of [[100, 0.4], [60, 0.333], [7, 0.5], [1_000, 0.0333]] as const) {
      const left = sharesLeft([{ ratios: new Map([[ID, share]]), otherwise: 0.5, sinceMs: 0 }], 0.01, 0)!.ratios.get(ID)!;
      expect(degradedLimit(limit, share) + degradedLimit(limit, left), `${limit} × ${share}`).toBeLessThanOrEqual(limit);
    }
  });
});

describe("which regions are silent", () => {
  const SILENT_MS = 3_000;
  const liveness = (m = meter()) => new PeerLiveness({ self: "us", silentMs: SILENT_MS, meter: m });

  it("a region not heard from for longer than silentMs is given up at the share it had when last heard from, and taken back once heard from again", () => {
    const p = liveness();
    // Everyone heard from at 5.5 s (eu's last arrival before its cut).
    expect(p.observe(look(5_600, { us: 5_600, eu: 5_500, ap: 5_500 }))).toBe(false);
    expect(p.sharesLeft).toBeNull();
    // ap keeps being heard from; eu not: silent only past SILENT_MS.
    expect(p.observe(look(8_500, { us: 8_500, eu: 5_500, ap: 8_400 }))).toBe(false);
    expect(p.silenceMs.get("eu")).toBe(3_000);
    expect(p.observe(look(8_600, { us: 8_600, eu: 5_500, ap: 8_500 }))).toBe(true);
    expect(p.silentPeers).toEqual([expect.objectContaining({ region: "eu", silentForMs: 3_100 })]);
    expect(p.silentPeers[0]!.shares.ratios.get(ID)).toBeCloseTo(0.4);
    const left = p.sharesLeft!;
    expect(left.ratios.get(ID)).toBeCloseTo(0.6);
    expect(left.otherwise).toBeCloseTo(2 / 3);
    // Still silent: the same shares object (the policy in force is not rebuilt on every look).
    expect(p.observe(look(20_000, { us: 20_000, eu: 5_500, ap: 19_900 }))).toBe(false);
    expect(p.sharesLeft).toBe(left);
    expect(p.silentPeers[0]!.silentForMs).toBe(14_500);
    // Heard from again: the whole limit.
    expect(p.observe(look(20_500, { us: 20_500, eu: 20_400, ap: 20_400 }))).toBe(true);
    expect(p.sharesLeft).toBeNull();
    expect(p.silentPeers).toEqual([]);
  });

  it("judges nobody silent while its own link is down, nor before the link has been up for silentMs", () => {
    const p = liveness();
    expect(p.observe(look(20_000, { eu: 1_000, ap: 1_000 }, null))).toBe(false);
    expect(p.observe(look(20_000, { eu: 1_000, ap: 1_000 }, 2_000))).toBe(false);
    expect(p.observe(look(21_500, { eu: 1_000, ap: 21_400 }, 3_500))).toBe(true);
    expect(p.silentPeers.map((s) => s.region)).toEqual(["eu"]);
    expect(p.reset()).toBe(true);
    expect(p.sharesLeft).toBeNull();
  });

  it("counts only the deployment's regions, and gives up the equal share of a region never measured", () => {
    const p = liveness(new RegionShareMeter());
    expect(p.observe({ ...look(30_000, { gone: 1_000, eu: 1_000, ap: 29_900 }), regions: REGIONS })).toBe(true);
    expect(p.silentPeers.map((s) => s.region)).toEqual(["eu"]);
    expect(p.sharesLeft!.ratios.size).toBe(0);
    expect(p.sharesLeft!.otherwise).toBeCloseTo(2 / 3);
    // Without a shares document every region heard from is a peer.
    const q = liveness(new RegionShareMeter());
    q.observe({ ...look(30_000, { gone: 1_000, eu: 29_000 }), regions: null });
    expect(q.silentPeers.map((s) => s.region)).toEqual(["gone"]);
    expect(SETTLE_MS).toBeLessThan(SILENT_MS);
  });
});
