/**
 * `regions: split` (docs/regions.md#split-each-region-its-share): each region enforces its share of
 * a limit, and the shares never add up to more than the limit. Pure: the worker plans the shares
 * from observed demand (lib/jobs/region-rebalance.ts), every region's Redis holds the same
 * shares document (lib/redis/region-shares.ts), and each decision server applies its own region's
 * share to the policy it enforces (applyRegionShares).
 *
 * Shares are weights in parts per million (WEIGHT_TOTAL) per limit and region, not numbers: a tenant's
 * override of a split limit has another number but the same id, and is split by the same weights.
 * A region's share of a limit L is allocateShare(L, weights, its index): L × weight ÷ WEIGHT_TOTAL,
 * rounded down, so the regions' shares add up to at most L; a share is never below 1 (the one
 * exception to "at most L": a region whose exact share of a tiny limit is below one request).
 *
 * Moving shares safely: a region whose share grows may only use it once every other region's
 * smaller share has been in force for a whole window (the decisions a region admitted under its
 * old, larger share still count in windows that began before the change). So a rebalance first
 * lowers every weight that falls (`weights` = the per-region minimum of old and new), and only after
 * SETTLE time (the limit's window, or its lease TTL for concurrency, or its refill time for a bucket,
 * plus the followers' poll) raises those that grow (`pending` promoted). In any window the total is
 * then at most the limit; the price is under-admission while demand moves faster than that.
 */
import { z } from "zod";
import type { CompiledGlobalCap, CompiledLimit, CompiledOverride, CompiledPolicy } from "./compiled";

/** A region's weight of a split limit is in parts per million; weights of one limit add up to this. */
export const WEIGHT_TOTAL = 1_000_000;

const weights = z.array(z.number().int().min(0).max(WEIGHT_TOTAL)).refine((w) => w.reduce((a, b) => a + b, 0) <= WEIGHT_TOTAL, "weights add up to more than 1,000,000");

/** The shares document, the same in every region's Redis (`<p>{policy}:region-shares`). */
export const regionSharesSchema = z.strictObject({
  /** The regions, in SLUICE_REGIONS order: weights are indexed by position. */
  regions: z.array(z.string().min(1)).min(1),
  /** When the worker last wrote it (ms since the epoch). */
  atMs: z.number().int().min(0),
  /** Per split limit or global cap id; an id not listed is split equally. */
  limits: z.record(
    z.string(),
    z.strictObject({
      /** In force now. */
      weights,
      /** Larger weights waiting for the smaller ones to have been in force long enough. */
      pending: z.strictObject({ weights, notBeforeMs: z.number().int().min(0) }).optional(),
    }),
  ),
});
export type RegionShares = z.infer<typeof regionSharesSchema>;

/** Equal weights for `n` regions, adding up to WEIGHT_TOTAL exactly (the first ones get the remainder). */
export function equalWeights(n: number): number[] {
  const base = Math.floor(WEIGHT_TOTAL / n);
  return Array.from({ length: n }, (_, i) => base + (i < WEIGHT_TOTAL - base * n ? 1 : 0));
}

/**
 * Region `index`'s share of `total`: total × its weight ÷ WEIGHT_TOTAL, rounded down, and never below
 * 1. Rounded down and computed from the region's own weight alone, so regions holding different
 * documents still never add up to more than the total as long as each region's weight is at most
 * the larger of its weights in the two (planShares keeps consecutive documents ordered that way).
 * The one excess: a region whose exact share is below 1 still admits 1 (a limit smaller than its
 * number of regions ÷ the region's weight); docs/regions.md states it.
 */
export function allocateShare(total: number, w: readonly number[], index: number): number {
  const exact = (BigInt(total) * BigInt(w[index] ?? 0)) / BigInt(WEIGHT_TOTAL);
  return Math.max(1, Number(exact));
}

/** Where a decision server stands in the shares document. */
export type RegionSharesStatus =
  /** No document: one region (SLUICE_REGIONS unset), a split limit is enforced whole. */
  | { kind: "none" }
  | { kind: "ok"; index: number; regions: number }
  /** SLUICE_REGION unset or not among the document's regions: the smallest share, as an extra region. */
  | { kind: "unknown-region"; regions: string[] };

export function sharesStatus(shares: RegionShares | null, region: string | undefined): RegionSharesStatus {
  if (!shares) return { kind: "none" };
  const index = region === undefined ? -1 : shares.regions.indexOf(region);
  if (index < 0) return { kind: "unknown-region", regions: shares.regions };
  return { kind: "ok", index, regions: shares.regions.length };
}

/** The weights of `id` and this region's index in them (an unknown region: one more, with no weight). */
function weightsFor(shares: RegionShares, id: string, status: RegionSharesStatus): { w: number[]; index: number } {
  const n = shares.regions.length;
  const w = shares.limits[id]?.weights ?? equalWeights(n);
  if (status.kind === "ok") return { w, index: status.index };
  // Not one of the listed regions: count it as an extra region with the least (1 unit).
  return { w: [...w, 0], index: n };
}

function splitLimit(l: CompiledLimit, shares: RegionShares, status: RegionSharesStatus): CompiledLimit {
  const { w, index } = weightsFor(shares, l.id, status);
  const limit = allocateShare(l.limit, w, index);
  // A bucket's size shrinks with its rate: burst ÷ limit stays what the policy says.
  const burst = l.burst === l.limit ? limit : allocateShare(l.burst, w, index);
  return { ...l, limit, burst };
}

function splitCap(g: CompiledGlobalCap, shares: RegionShares, status: RegionSharesStatus): CompiledGlobalCap {
  const { w, index } = weightsFor(shares, g.id, status);
  return { ...g, limit: allocateShare(g.limit, w, index) };
}

function splitOverride(o: CompiledOverride, shares: RegionShares, status: RegionSharesStatus): CompiledOverride {
  return o.kind === "limit" && o.limit.regions === "split" ? { ...o, limit: splitLimit(o.limit, shares, status) } : o;
}

/**
 * The policy this region enforces: every `split` limit, override and global cap replaced by this
 * region's share. No document (one region), or no split limit: `doc` itself. Version and checksum
 * stay those of the published document (answers name the version that decided).
 */
export function applyRegionShares(doc: CompiledPolicy, shares: RegionShares | null, region: string | undefined): CompiledPolicy {
  const status = sharesStatus(shares, region);
  if (!shares || status.kind === "none") return doc;
  const hasSplit =
    doc.globalCaps.some((g) => g.regions === "split") ||
    Object.values(doc.tiers).some((t) => t.limits.some((l) => l.regions === "split"));
  if (!hasSplit) return doc;
  const tiers = Object.fromEntries(
    Object.entries(doc.tiers).map(([name, t]) => [name, { ...t, limits: t.limits.map((l) => (l.regions === "split" ? splitLimit(l, shares, status) : l)) }]),
  );
  const tenants = Object.fromEntries(
    Object.entries(doc.tenants).map(([slug, t]) => [slug, t.overrides.some((o) => o.kind === "limit" && o.limit.regions === "split") ? { ...t, overrides: t.overrides.map((o) => splitOverride(o, shares, status)) } : t]),
  );
  const globalCaps = doc.globalCaps.map((g) => (g.regions === "split" ? splitCap(g, shares, status) : g));
  return { ...doc, tiers, tenants, globalCaps };
}

/**
 * `regions: shared` with its link to the other regions cut (docs/regions.md, "Degrade and heal"): the
 * share of each shared limit and global cap this region enforces until the link heals, as measured
 * while it worked (lib/regions/region-share-meter.ts). `ratios` holds the shares measured per limit
 * id (already floored); a limit with no measured traffic gets `otherwise`, the equal share.
 */
export interface DegradedShares {
  ratios: ReadonlyMap<string, number>;
  otherwise: number;
  /** When the link was found cut (ms since the epoch). */
  sinceMs: number;
}

/** floor(L × ratio), never below 1 (as a split share); a hair of tolerance so 100 × 0.9 is 90, not 89. */
export function degradedLimit(limit: number, ratio: number): number {
  return Math.max(1, Math.min(limit, Math.floor(limit * ratio + 1e-9)));
}

function degradeLimit(l: CompiledLimit, d: DegradedShares): CompiledLimit {
  const ratio = d.ratios.get(l.id) ?? d.otherwise;
  const limit = degradedLimit(l.limit, ratio);
  return { ...l, limit, burst: l.burst === l.limit ? limit : degradedLimit(l.burst, ratio) };
}

function hasShared(doc: CompiledPolicy): boolean {
  return doc.globalCaps.some((g) => g.regions === "shared") || Object.values(doc.tiers).some((t) => t.limits.some((l) => l.regions === "shared"));
}

/**
 * The policy this region enforces while its replication link is degraded: every `shared` limit,
 * override and global cap replaced by this region's last share of it (as `split` does with the
 * shares document). No shared limit: `doc` itself.
 */
export function applyDegradedShares(doc: CompiledPolicy, degraded: DegradedShares | null): CompiledPolicy {
  if (!degraded || !hasShared(doc)) return doc;
  const tiers = Object.fromEntries(
    Object.entries(doc.tiers).map(([name, t]) => [name, { ...t, limits: t.limits.map((l) => (l.regions === "shared" ? degradeLimit(l, degraded) : l)) }]),
  );
  const isShared = (o: CompiledOverride) => o.kind === "limit" && o.limit.regions === "shared";
  const tenants = Object.fromEntries(
    Object.entries(doc.tenants).map(([slug, t]) => [slug, t.overrides.some(isShared) ? { ...t, overrides: t.overrides.map((o) => (o.kind === "limit" && isShared(o) ? { ...o, limit: degradeLimit(o.limit, degraded) } : o)) } : t]),
  );
  const globalCaps = doc.globalCaps.map((g) => (g.regions === "shared" ? { ...g, limit: degradedLimit(g.limit, degraded.ratios.get(g.id) ?? degraded.otherwise) } : g));
  return { ...doc, tiers, tenants, globalCaps };
}

/** The published names of the shared limits and caps (`free-tenant`, `global-orders`), by id: /readyz says the shares in force by name. */
export function sharedLimitNames(doc: CompiledPolicy): Map<string, string> {
  const names = new Map<string, string>();
  for (const t of Object.values(doc.tiers)) for (const l of t.limits) if (l.regions === "shared") names.set(l.id, l.name);
  for (const g of doc.globalCaps) if (g.regions === "shared") names.set(g.id, `global-${g.operation}`);
  return names;
}

/**
 * `regions: shared` with some regions silent (docs/regions.md, "A partial cut"): what the regions
 * still linked enforce together while the silent ones enforce their last shares on their own —
 * 1 − the sum of those shares, per limit (a limit a silent region had no measured traffic of: its
 * `otherwise`), never below `floor` (the least share any region enforces). The silent regions'
 * shares are those this region measured for them (lib/regions/region-share-meter.ts snapshotOf), the
 * same windows and floor each measured its own with, so the two sides add up to the limit.
 * No silent region: null (the whole limit).
 */
export function sharesLeft(silent: readonly DegradedShares[], floor: number, sinceMs: number): DegradedShares | null {
  if (silent.length === 0) return null;
  const clamp = (x: number) => Math.min(1, Math.max(floor, x));
  const ids = new Set(silent.flatMap((s) => [...s.ratios.keys()]));
  const ratios = new Map<string, number>();
  for (const id of ids) ratios.set(id, clamp(1 - silent.reduce((sum, s) => sum + (s.ratios.get(id) ?? s.otherwise), 0)));
  return { ratios, otherwise: clamp(1 - silent.reduce((sum, s) => sum + s.otherwise, 0)), sinceMs };
}
