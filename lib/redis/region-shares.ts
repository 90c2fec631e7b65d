/**
 * The shares document of `split` limits in Redis (`keys.regionShares()`, lib/policy/region-shares.ts):
 * written to every region's Redis by the worker (lib/jobs/region-rebalance.ts) and seeded by every
 * publish with equal weights when a region has none yet; followed by each decision server
 * (RegionSharesFollower), which applies its region's share to the policy it enforces.
 *
 * A document that does not validate never replaces the last good one (the follower keeps it and
 * says so); a missing one means one region, a split limit enforced whole.
 *
 * The follower also carries the shares of `shared` limits while this region's replication link is
 * degraded (worker/decision/replication.ts hands them over, setDegraded): the policy in force is
 * then the published one with this region's share of its split limits and its last measured share
 * of its shared ones.
 */
import { Poller } from "../net/poller";
import type { CompiledPolicy } from "../policy/compiled";
import { applyDegradedShares, applyRegionShares, regionSharesSchema, sharesStatus, type DegradedShares, type RegionShares, type RegionSharesStatus } from "../policy/region-shares";
import type { RedisClient } from "./client";
import { readJsonDocument } from "./json-document";
import { keys } from "./keys";

/** How often a decision server re-reads its region's shares document. */
export const REGION_SHARES_POLL_MS = 1_000;

export type ReadSharesResult = { status: "ok"; shares: RegionShares } | { status: "none" } | { status: "invalid"; message: string };

export async function readRegionShares(redis: RedisClient): Promise<ReadSharesResult> {
  const read = await readJsonDocument(redis, keys.regionShares(), regionSharesSchema);
  return read.status === "ok" ? { status: "ok", shares: read.value } : read;
}

export async function writeRegionShares(redis: RedisClient, shares: RegionShares): Promise<void> {
  await redis.set(keys.regionShares(), JSON.stringify(shares));
}

/**
 * Gives a region that holds no shares document for `regions` one: `from` (another region's, which
 * the worker keeps identical everywhere) or, the first time, equal weights. A document it holds for
 * the same regions is left alone: a publish must not undo a rebalance.
 */
export async function seedRegionShares(redis: RedisClient, regions: readonly string[], nowMs: number, from?: RegionShares): Promise<void> {
  const held = await readRegionShares(redis);
  if (held.status === "ok" && held.shares.regions.join(",") === regions.join(",")) return;
  const same = from && from.regions.join(",") === regions.join(",");
  await writeRegionShares(redis, same ? from : { regions: [...regions], atMs: nowMs, limits: {} });
}

/** What this region's shares are now: replaced whole on any change, so a decision compares one reference. */
interface InForce {
  shares: RegionShares | null;
  /** The shares of `shared` limits while the replication link is degraded; null while it works. */
  degraded: DegradedShares | null;
}

/**
 * A decision server's view of its region's shares: polls the document, keeps the last good one,
 * and hands out the policy with this region's shares applied (computed once per change of either).
 */
export class RegionSharesFollower {
  private inForce: InForce = { shares: null, degraded: null };
  private text: string | null = null;
  private lastProblem: string | null = null;
  /** Per published document (the live one, and a guarded rollout's candidate for its cohort): its version with this region's shares, until the shares change. */
  private derived = new WeakMap<CompiledPolicy, { inForce: InForce; doc: CompiledPolicy }>();
  private readonly poller: Poller;

  constructor(
    private readonly options: {
      redis: RedisClient;
      region: string | undefined;
      /** The shares changed: cached denials may name the old numbers. */
      onChange?: () => void;
      log?: (message: string) => void;
      pollMs?: number;
    },
  ) {
    this.poller = new Poller(() => this.load(), options.pollMs ?? REGION_SHARES_POLL_MS);
  }

  start(): Promise<void> {
    return this.poller.start();
  }

  stop(): void {
    this.poller.stop();
  }

  private async load(): Promise<void> {
    // A failed read (Redis away) keeps the last good shares silently: the breaker and the policy
    // source already say Redis is away. A document that does not validate is said once.
    const text = await this.options.redis.get(keys.regionShares()).catch(() => undefined);
    // Missing (lost with the rest of Redis; the worker writes it back) or unchanged: keep what is in force.
    if (text === undefined || text === null || text === this.text) return;
    let problem: string | null = null;
    try {
      const parsed = regionSharesSchema.safeParse(JSON.parse(text));
      if (parsed.success) {
        this.text = text;
        this.inForce = { ...this.inForce, shares: parsed.data };
        this.lastProblem = null;
        this.options.onChange?.();
        return;
      }
      problem = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    } catch {
      problem = "not JSON";
    }
    if (problem !== this.lastProblem) this.options.log?.(`region shares document does not validate (keeping the last good one): ${problem}`);
    this.lastProblem = problem;
  }

  /** Where this region stands (for /readyz). */
  get status(): RegionSharesStatus {
    return sharesStatus(this.inForce.shares, this.options.region);
  }

  /** The regions of the shares document, or null without one. */
  get regions(): readonly string[] | null {
    return this.inForce.shares?.regions ?? null;
  }

  /** The shares of `shared` limits to enforce (the replication link degraded, or other regions silent), or null (the whole limits). */
  setDegraded(degraded: DegradedShares | null): void {
    if (degraded === this.inForce.degraded) return;
    this.inForce = { ...this.inForce, degraded };
    this.options.onChange?.();
  }

  /** `doc` with this region's shares of its split limits (and, while degraded, of its shared ones). */
  apply(doc: CompiledPolicy | null): CompiledPolicy | null {
    if (!doc) return null;
    const d = this.derived.get(doc);
    if (d && d.inForce === this.inForce) return d.doc;
    const inForce = this.inForce;
    const derived = applyDegradedShares(applyRegionShares(doc, inForce.shares, this.options.region), inForce.degraded);
    this.derived.set(doc, { inForce, doc: derived });
    return derived;
  }
}
