/**
 * `regions: shared`, what a cut link falls back to (docs/regions.md, "Degrade and heal"): this
 * region's recent share of what every region admitted for each shared limit and global cap, so that
 * a region that loses contact enforces floor(L × its share) instead of the whole limit.
 *
 * Fed off the decision path: the units this region sent (the outbox's batches, when they are taken
 * to be published) and the units the other regions' batches brought (once applied here). Each is
 * attributed to the window it was admitted in (the same epoch-aligned windows every region names,
 * lib/regions/replication.ts), per limit id — all of a limit's counters together (every tenant and
 * subject of it). A region's share of a limit is own ÷ (own + the others') over the last complete
 * window: the newest one that ended at least SETTLE_MS ago (what the others admitted in it has
 * arrived by then while the link works); failing that (just after start) the newest that ended, or
 * the current one. Measured as of a given time (when another region was last heard from), the
 * windows are those complete by then.
 * Never below FLOOR_OF_EQUAL of an equal share; a limit with no traffic measured gets the equal share.
 *
 * The others' units are also kept per region, so another region's share (its units ÷ all) is
 * measured the same way (snapshotOf): what the regions still linked give up while it is silent
 * (lib/regions/region-liveness.ts, docs/regions.md "A partial cut").
 */
import { limitIdOfCounterKey } from "../policy/counter-keys";
import type { DegradedShares } from "../policy/region-shares";
import type { ReplicatedUnits } from "./replication";

/** A share is never below this fraction of an equal share (1 ÷ regions): a quiet region still admits a little. */
export const FLOOR_OF_EQUAL = 0.1;
/** A window counts as complete this long after its end: the other regions' units of it have arrived (the lag is well under it while the link works). */
export const SETTLE_MS = 1_000;
/** Windows kept per limit: the current one, the last complete one, and one more while it settles. */
const KEEP_WINDOWS = 3;
/** Limits tracked at most (ids come from other regions' batches too): a bound, not a working size. */
const MAX_LIMITS = 10_000;

interface WindowTally {
  startMs: number;
  endMs: number;
  own: number;
  others: number;
  /** The others' units by region (a silent peer's share is its units ÷ all, lib/regions/region-liveness.ts). */
  byRegion: Map<string, number>;
}

/** The epoch-aligned window a replicated unit was admitted in (its start and end, ms). */
export function windowOfUnits(e: Pick<ReplicatedUnits, "key" | "field" | "expireAtMs" | "subWindows">): { startMs: number; endMs: number } | null {
  if (e.field === "") {
    // A fixed window: `<counter>:<windowStartMs>`, expiring at the window's end.
    const startMs = Number(e.key.slice(e.key.lastIndexOf(":") + 1));
    return Number.isSafeInteger(startMs) && e.expireAtMs > startMs ? { startMs, endMs: e.expireAtMs } : null;
  }
  // A sliding window counter's sub-window i of k: it expires at (i + k + 1) × sub (replicatedWindow).
  const i = Number(e.field);
  const k = e.subWindows;
  if (!Number.isSafeInteger(i) || k < 1) return null;
  const subMs = e.expireAtMs / (i + k + 1);
  if (!Number.isSafeInteger(subMs) || subMs < 1) return null;
  const windowMs = k * subMs;
  const startMs = Math.floor((i * subMs) / windowMs) * windowMs;
  return { startMs, endMs: startMs + windowMs };
}

export class RegionShareMeter {
  private readonly limits = new Map<string, WindowTally[]>();
  private readonly regions = new Set<string>();

  /** Units admitted here (`from` = null) or in another region, as batches carry them. */
  record(entries: readonly ReplicatedUnits[], from: string | null): void {
    if (from !== null) this.regions.add(from);
    for (const e of entries) {
      const id = limitIdOfCounterKey(e.key);
      const window = id === null ? null : windowOfUnits(e);
      if (id === null || window === null) continue;
      let tallies = this.limits.get(id);
      if (!tallies) {
        if (this.limits.size >= MAX_LIMITS) continue;
        tallies = [];
        this.limits.set(id, tallies);
      }
      let t: WindowTally | undefined;
      for (const w of tallies) if (w.startMs === window.startMs) t = w;
      if (!t) {
        t = { startMs: window.startMs, endMs: window.endMs, own: 0, others: 0, byRegion: new Map() };
        tallies.push(t);
        // Oldest first; a window older than the ones kept (a late batch) sorts in and may fall off at once.
        if (tallies.length > 1 && tallies.at(-2)!.startMs > t.startMs) tallies.sort((x, y) => x.startMs - y.startMs);
        if (tallies.length > KEEP_WINDOWS) tallies.shift();
      }
      if (from === null) t.own += e.units;
      else {
        t.others += e.units;
        t.byRegion.set(from, (t.byRegion.get(from) ?? 0) + e.units);
      }
    }
  }

  /** The other regions seen in batches so far (for the number of regions when nothing else says it). */
  get otherRegions(): number {
    return this.regions.size;
  }

  /** The window of `id` a share at `nowMs` is measured in: the newest with traffic that settled, else the newest that ended, else the newest. */
  private windowAt(id: string, nowMs: number): WindowTally | undefined {
    const busy = (this.limits.get(id) ?? []).filter((w) => w.own + w.others > 0 && w.startMs < nowMs);
    return busy.findLast((t) => t.endMs + SETTLE_MS <= nowMs) ?? busy.findLast((t) => t.endMs <= nowMs) ?? busy.at(-1);
  }

  /** This region's measured share of `id` at `nowMs` (unfloored), or null when no traffic of it was seen. */
  measured(id: string, nowMs: number): number | null {
    const w = this.windowAt(id, nowMs);
    return w ? w.own / (w.own + w.others) : null;
  }

  /** Another region's measured share of `id` (its units ÷ all regions'), as of `asOfMs`, or null when no traffic of it was seen. */
  measuredOf(region: string, id: string, asOfMs: number): number | null {
    const w = this.windowAt(id, asOfMs);
    return w ? (w.byRegion.get(region) ?? 0) / (w.own + w.others) : null;
  }

  /**
   * Every measured share, floored, for `regions` regions: what a cut link enforces (lib/policy/region-shares.ts
   * applyDegradedShares), measured as of `asOfMs` — when another region was last heard from: a link
   * that went silent before it was found cut carried nothing of the others' since.
   */
  snapshot(nowMs: number, regions: number, asOfMs = nowMs): DegradedShares {
    return this.shares((id) => this.measured(id, asOfMs), nowMs, regions);
  }

  /**
   * `region`'s shares as this region measured them, as of `asOfMs` (when it was last heard from:
   * the windows it had sent all of by then), floored as it floors its own: what it enforces once
   * its link is cut, and so what the regions still linked give up while it is silent.
   */
  snapshotOf(region: string, asOfMs: number, nowMs: number, regions: number): DegradedShares {
    return this.shares((id) => this.measuredOf(region, id, asOfMs), nowMs, regions);
  }

  private shares(measure: (id: string) => number | null, nowMs: number, regions: number): DegradedShares {
    const n = Math.max(1, regions);
    const floor = FLOOR_OF_EQUAL / n;
    const ratios = new Map<string, number>();
    for (const id of this.limits.keys()) {
      const share = measure(id);
      if (share !== null) ratios.set(id, Math.min(1, Math.max(floor, share)));
    }
    return { ratios, otherwise: 1 / n, sinceMs: nowMs };
  }
}
