/**
 * Planning the shares of `split` limits from observed demand (docs/regions.md#split-each-region-its-share).
 * Pure: lib/jobs/region-rebalance.ts reads each region's demand and writes the plan to every region.
 *
 * Demand of a split limit in a region: the decisions its region's decision servers counted this
 * minute (the usage hash, lib/redis/usage-format.ts: `d|<tenant>|<tier>|<operation>|<outcome>`) of the
 * limit's tier and operation (a global cap: of its operation, every tier), allowed or not. Each
 * region's target weight is a floor of MIN_WEIGHT_FRACTION of an equal share plus the rest in
 * proportion to its demand; below MIN_DEMAND decisions in all regions the weights stay. A target
 * that moves no region by more than MIN_MOVE stays as it is (no churn).
 *
 * A move lowers the falling weights at once and raises the growing ones only after the limit's
 * settle time (see lib/policy/region-shares.ts for why that keeps the total at most the limit).
 */
import type { CompiledPolicy } from "./compiled";
import { equalWeights, WEIGHT_TOTAL, type RegionShares } from "./region-shares";

/** Below this many decisions (all regions, this minute) demand says nothing: weights stay. */
export const MIN_DEMAND = 20;
/** Every region keeps at least this fraction of an equal share, so a quiet region can still admit. */
export const MIN_WEIGHT_FRACTION = 0.1;
/** A target that moves no region's weight by more than this (of WEIGHT_TOTAL) is not applied. */
export const MIN_MOVE = 0.05 * WEIGHT_TOTAL;

/** One split limit or global cap: what it counts, and how long a smaller share must be in force before another region's grows. */
export interface SplitTarget {
  id: string;
  /** The tier whose decisions count, or null for a global cap (every tier). */
  tier: string | null;
  /** An operation name, or `*`. */
  operation: string;
  settleMs: number;
}

/** Every split limit and global cap of `doc` (tenants' overrides share their limit's id). */
export function splitTargets(doc: CompiledPolicy): SplitTarget[] {
  const out: SplitTarget[] = [];
  for (const tier of Object.values(doc.tiers)) {
    for (const l of tier.limits) {
      if (l.regions !== "split") continue;
      // How far back a decision still counts: a window (two for the sliding counter, which weighs
      // the previous one), a lease for concurrency, the time to refill a full bucket.
      const settleMs =
        l.algorithm === "concurrency"
          ? l.leaseTtlMs
          : l.algorithm === "sliding_window_counter"
            ? 2 * l.windowMs
            : l.algorithm === "token_bucket" || l.algorithm === "leaky_bucket"
              ? Math.ceil(l.windowMs * Math.max(1, l.burst / l.limit))
              : l.windowMs;
      out.push({ id: l.id, tier: tier.name, operation: l.operation, settleMs });
    }
  }
  for (const g of doc.globalCaps) if (g.regions === "split") out.push({ id: g.id, tier: null, operation: g.operation, settleMs: g.windowMs });
  return out;
}

/** A region's demand for `target` this minute, from its usage hash's fields. */
export function demandOf(target: SplitTarget, usage: Readonly<Record<string, string>>): number {
  let total = 0;
  for (const [field, value] of Object.entries(usage)) {
    if (!field.startsWith("d|")) continue;
    const [, , tier, operation] = field.split("|");
    if (tier === "_" || (target.tier !== null && tier !== target.tier)) continue;
    if (target.operation !== "*" && operation !== target.operation) continue;
    total += Number(value) || 0;
  }
  return total;
}

/** Weights from demand: the floor for every region, the rest by demand, adding up to WEIGHT_TOTAL. */
export function targetWeights(demand: readonly number[]): number[] {
  const n = demand.length;
  const floor = Math.floor((WEIGHT_TOTAL / n) * MIN_WEIGHT_FRACTION);
  const rest = WEIGHT_TOTAL - floor * n;
  const sum = demand.reduce((a, b) => a + b, 0);
  const raw = demand.map((d) => floor + Math.floor((rest * d) / sum));
  let leftover = WEIGHT_TOTAL - raw.reduce((a, b) => a + b, 0);
  // The units lost to rounding go to the busiest regions.
  const order = demand.map((d, i) => ({ d, i })).sort((a, b) => b.d - a.d || a.i - b.i);
  for (let k = 0; leftover > 0; k = (k + 1) % n, leftover--) raw[order[k]!.i]! += 1;
  return raw;
}

export interface PlanInput {
  regions: string[];
  /** The document every region holds now (null: none yet, or its regions differ: start equal). */
  previous: RegionShares | null;
  targets: SplitTarget[];
  /** demand[t][r]: target t's demand in region r; null for a region that could not be read. */
  demand: (number | null)[][];
  /** Did the previous write reach every region? If not, nothing grows (a region may still hold larger, older weights). */
  lastWriteComplete: boolean;
  nowMs: number;
  /** How long decision servers may take to follow a written document (their poll, twice). */
  followMs: number;
}

const maxMove = (a: readonly number[], b: readonly number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));

/** The next shares document. */
export function planShares(input: PlanInput): RegionShares {
  const { regions, targets, nowMs } = input;
  const n = regions.length;
  const sameRegions = input.previous !== null && input.previous.regions.join(",") === regions.join(",");
  const limits: RegionShares["limits"] = {};
  targets.forEach((t, ti) => {
    const prev = sameRegions ? input.previous!.limits[t.id] : undefined;
    let weights = prev?.weights ?? equalWeights(n);
    let pending = prev?.pending;
    const settle = nowMs + t.settleMs + input.followMs;
    if (pending && input.lastWriteComplete && nowMs >= pending.notBeforeMs) {
      weights = pending.weights;
      pending = undefined;
    } else if (pending && !input.lastWriteComplete) {
      pending = { ...pending, notBeforeMs: Math.max(pending.notBeforeMs, settle) };
    }
    const demand = input.demand[ti] ?? [];
    const known = demand.every((d) => d !== null);
    const total = known ? (demand as number[]).reduce((a, b) => a + b, 0) : 0;
    if (known && demand.length === n && total >= MIN_DEMAND) {
      const target = targetWeights(demand as number[]);
      const heading = pending?.weights ?? weights;
      if (maxMove(target, heading) > MIN_MOVE) {
        // Lower what falls now; raise what grows after the settle time.
        weights = weights.map((w, i) => Math.min(w, target[i]!));
        pending = { weights: target, notBeforeMs: settle };
      }
    }
    limits[t.id] = pending ? { weights, pending } : { weights };
  });
  return { regions: [...regions], atMs: nowMs, limits };
}
