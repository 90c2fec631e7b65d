/**
 * `regions: shared`, a partial cut (docs/regions.md, "A partial cut"): one region cut from NATS
 * while the others stay linked. The cut region enforces its last share of each shared limit
 * (worker/decision/replication.ts, "Degrade and heal"); the regions still linked must give that
 * share up, or together they keep counting against the whole limit and the regions admit up to
 * L × (1 + its share).
 *
 * Every region sends a batch or, when idle, a heartbeat at least every heartbeat interval; the
 * region's Redis keeps when each other region was last heard from (lib/regions/region-heard.ts).
 * A peer not heard from for longer than `silentMs` (and not since this process's link came up) is
 * silent: this region then enforces 1 − the sum of the silent peers' last shares
 * (lib/policy/region-shares.ts sharesLeft). A peer's share is measured here from its batches
 * (lib/regions/region-share-meter.ts snapshotOf) as of when it was last heard from, refreshed on
 * every look while it is heard from and frozen once it falls silent, so it is the share it took
 * with it. Heard from again: the whole limit at once. Pure: the caller reads the ledger and the clock.
 */
import { sharesLeft, type DegradedShares } from "../policy/region-shares";
import { FLOOR_OF_EQUAL, type RegionShareMeter } from "./region-share-meter";

export interface SilentPeer {
  region: string;
  /** How long nothing of it arrived here (ms), as of the last look. */
  silentForMs: number;
  /** Its last shares: what this region gives up while it is silent. */
  shares: DegradedShares;
}

export interface PeerLook {
  /** This region's Redis TIME (the ledger's clock). */
  nowMs: number;
  /** Per region, when its last batch or heartbeat arrived here (the same clock). */
  heardMs: ReadonlyMap<string, number>;
  /** How long this process's link has been up (ms, its own clock); null while it is not (degraded, connecting): nothing is judged silent then. */
  linkedForMs: number | null;
  /** The regions of the deployment (the shares document's), or null without one: every region heard from is a peer. */
  regions: readonly string[] | null;
}

export class PeerLiveness {
  /** Per peer, its shares as of when it was last heard from (measured once per new arrival: later looks would only see windows slide out). */
  private readonly last = new Map<string, { heardMs: number; shares: DegradedShares }>();
  private silent = new Map<string, SilentPeer>();
  private left: DegradedShares | null = null;
  /** Per peer, how long since it was last heard from (ms), as of the last look (for /metrics). */
  readonly silenceMs = new Map<string, number>();

  constructor(
    private readonly options: {
      self: string;
      silentMs: number;
      meter: RegionShareMeter;
    },
  ) {}

  /** The regions counted, this one included: floors are a tenth of an equal share of them. */
  private regionCount(look: PeerLook, peers: readonly string[]): number {
    return Math.max(look.regions?.length ?? 1, peers.length + 1, this.options.meter.otherRegions + 1);
  }

  /** One look at the ledger; true when the silent peers changed (the shares in force with them). */
  observe(look: PeerLook): boolean {
    const peers = [...look.heardMs.keys()].filter((r) => r !== this.options.self && (look.regions === null || look.regions.includes(r)));
    const n = this.regionCount(look, peers);
    const next = new Map<string, SilentPeer>();
    this.silenceMs.clear();
    for (const region of peers) {
      const heardMs = look.heardMs.get(region)!;
      const quietMs = Math.max(0, look.nowMs - heardMs);
      this.silenceMs.set(region, quietMs);
      if (look.linkedForMs !== null && Math.min(quietMs, look.linkedForMs) > this.options.silentMs) {
        const shares = this.silent.get(region)?.shares ?? this.last.get(region)?.shares ?? { ratios: new Map(), otherwise: 1 / n, sinceMs: look.nowMs };
        next.set(region, { region, silentForMs: quietMs, shares });
      } else if (look.linkedForMs !== null && this.last.get(region)?.heardMs !== heardMs) {
        // Heard from: its share as of then (the windows it had sent all of), the one it would take with it.
        this.last.set(region, { heardMs, shares: this.options.meter.snapshotOf(region, Math.min(heardMs, look.nowMs), look.nowMs, n) });
      }
    }
    const changed = next.size !== this.silent.size || [...next.keys()].some((r) => !this.silent.has(r));
    this.silent = next;
    if (changed) this.left = sharesLeft([...next.values()].map((p) => p.shares), FLOOR_OF_EQUAL / n, look.nowMs);
    return changed;
  }

  /** The link went down or came back: nothing is judged silent until the next look says so. */
  reset(): boolean {
    const had = this.silent.size > 0;
    this.silent = new Map();
    this.left = null;
    return had;
  }

  get silentPeers(): SilentPeer[] {
    return [...this.silent.values()];
  }

  /** The shares this region enforces because of silent peers (null: none silent, the whole limit); the same object until they change. */
  get sharesLeft(): DegradedShares | null {
    return this.left;
  }
}
