/**
 * A tenant moved to another tier mid-period (docs/billing-periods.md, "Plan changes"). What was
 * used stays used; the new tier's quota governs the rest of the period, by the policy's rule:
 *
 *   full     the new quota for the whole period, usage carried over:
 *              period limit = Q_new;  the new counter may take Q_new − U_before
 *   prorate  the new quota scaled to the share of the period left at the change:
 *              rest = ⌊Q_new × (end − change) / (end − start)⌋;  period limit = U_before + rest;
 *              the new counter may take `rest`
 *
 * U_before is the old tier's counter for the same operation and period, read at decision time (the
 * decision server never knows it in advance: other servers may still count into it until they
 * load the new version). Pure.
 */
import type { Period } from "./types";

export const PLAN_CHANGE_RULES = ["full", "prorate"] as const;
export type PlanChangeRule = (typeof PLAN_CHANGE_RULES)[number];
export const DEFAULT_PLAN_CHANGE_RULE: PlanChangeRule = "full";

/** A quota of the tenant's tier before the change, whose counter holds U_before. */
export interface CarriedQuota {
  /** The old quota's id: its counter is `…:q:<quotaId>:<label of the period containing atMs>`. */
  quotaId: string;
  operation: string;
  period: Period;
  limit: number;
}

/** What publish stamps on a tenant whose tier differs from the live version's. */
export interface CompiledPlanChange {
  atMs: number;
  fromTier: string;
  rule: PlanChangeRule;
  /** The tenant's effective quotas just before the change (its overrides applied). */
  quotas: CarriedQuota[];
}

/** The old quota whose usage a new quota for (operation, period) carries, or null: a quota new to the tenant counts from the change. */
export function carriedQuota(change: CompiledPlanChange | null | undefined, operation: string, period: Period): CarriedQuota | null {
  return change?.quotas.find((q) => q.operation === operation && q.period === period) ?? null;
}

export interface QuotaAllowance {
  /** What the tenant may use in the whole period (shown as the quota's limit; thresholds are shares of it). */
  periodLimit: number;
  /** What the store lets the new counter reach: the enforcement number (./quota-window.ts). */
  counterLimit: number;
  /** U_before as given (0 outside the change's period). */
  usedBefore: number;
}

/**
 * The allowance of a quota of limit `limit` in the period [startMs, endMs) for a tenant whose plan
 * changed at `changeAtMs` with `usedBefore` units on the old tier's counter. A change outside the
 * period (an earlier period, or none) leaves the plain quota.
 */
export function quotaAllowance(input: {
  limit: number;
  rule: PlanChangeRule;
  period: { startMs: number; endMs: number };
  changeAtMs: number | null;
  usedBefore: number;
}): QuotaAllowance {
  const { limit, rule, period, changeAtMs } = input;
  if (changeAtMs === null || changeAtMs <= period.startMs || changeAtMs >= period.endMs) {
    return { periodLimit: limit, counterLimit: limit, usedBefore: 0 };
  }
  const usedBefore = Math.max(0, input.usedBefore);
  if (rule === "full") return { periodLimit: limit, counterLimit: Math.max(0, limit - usedBefore), usedBefore };
  // Integer arithmetic on the milliseconds: no float drift between servers for the same inputs.
  const rest = Number((BigInt(limit) * BigInt(period.endMs - changeAtMs)) / BigInt(period.endMs - period.startMs));
  return { periodLimit: usedBefore + rest, counterLimit: rest, usedBefore };
}
