/**
 * What the decision path hands the store for one quota of one tenant (docs/billing-periods.md, "On
 * the decision path"): the billing period that contains the planning instant and the one after it,
 * each with the counter label, the period's end and what the counter may reach there. The store
 * picks one by its own clock (Redis TIME, or the memory store's): `current` while its clock is
 * before `current.endMs`, `next` from then on. So periods are decided on the store's clock as every
 * window is, and the time zone arithmetic (lib/policy/billing-period.ts, the one home of the rule)
 * runs in TypeScript once per tenant and period, never in Lua.
 *
 * A plan change in a slot's period (lib/policy/plan-change.ts) shapes that slot:
 *   full     limit = Q, `carry` = the old tier's quota id: the store adds that counter (same label,
 *            same hash slot) to what was used, so the new counter may reach Q − U_before;
 *   prorate  limit = ⌊Q × (end − change) / (end − start)⌋ (what the new counter may reach), no carry.
 * Pure.
 */
import { billingWindow, type BillingPeriod } from "./billing-period";
import type { CompiledQuota, CompiledTenant } from "./compiled";
import { carriedQuota, quotaAllowance } from "./plan-change";

/** One period a quota check may count in. */
export interface QuotaSlot {
  startMs: number;
  endMs: number;
  /** The counter key's suffix: `<key>:<label>`. */
  label: string;
  /** What the tenant's use in this period may reach: units counted here plus the carried counter's. */
  limit: number;
  /** The old tier's quota id whose counter (same label) counts as used in this period; "" for none. */
  carry: string;
}

/** The period containing the planning instant, and the next. */
export interface QuotaWindow {
  current: QuotaSlot;
  next: QuotaSlot;
}

/**
 * How far before the store's estimated time a plan's window starts: a decision server whose
 * estimate of the store's clock runs up to this much ahead still hands the store the period the
 * store is in (one that lags is covered by `next`, up to a whole period).
 */
export const QUOTA_WINDOW_LAG_MS = 60_000;

function slotOf(period: BillingPeriod, quota: CompiledQuota, tenant: CompiledTenant): QuotaSlot {
  const change = tenant.planChange;
  const carried = carriedQuota(change, quota.operation, quota.period);
  const base = { startMs: period.startMs, endMs: period.endMs, label: period.label, limit: quota.limit, carry: "" };
  if (!change || !carried || carried.quotaId === quota.id || change.atMs <= period.startMs || change.atMs >= period.endMs) return base;
  if (change.rule === "full") return { ...base, carry: carried.quotaId };
  const allowance = quotaAllowance({ limit: quota.limit, rule: "prorate", period, changeAtMs: change.atMs, usedBefore: 0 });
  return { ...base, limit: allowance.counterLimit };
}

/** The window of `quota` of `tenant` planned at `nowMs` (the store's clock as the decision server estimates it). */
export function quotaWindow(nowMs: number, quota: CompiledQuota, tenant: CompiledTenant): QuotaWindow {
  const { current, next } = billingWindow(nowMs - QUOTA_WINDOW_LAG_MS, quota.period, tenant.billing ?? null, tenant.billingChange);
  return { current: slotOf(current, quota, tenant), next: slotOf(next, quota, tenant) };
}

/**
 * The slot the store counts in at its clock `nowMs`. Past `next.endMs` (a plan older than a whole
 * period, which the planner never keeps) it is still `next`: the store never invents a label.
 */
export function pickSlot(window: QuotaWindow, nowMs: number): QuotaSlot {
  return nowMs < window.current.endMs ? window.current : window.next;
}

/** The window as DECIDE's `win` field: `<end>;<label>;<limit>;<carry>;` for current, then next. No part holds `;` or `|`. */
export function encodeQuotaWindow(w: QuotaWindow): string {
  const slot = (s: QuotaSlot) => `${s.endMs};${s.label};${s.limit};${s.carry};`;
  return slot(w.current) + slot(w.next);
}

/** `<p>{t:<tenant>}:q:<quotaId>` → the same tenant's counter of quota `carry` (the Lua does the same on the last `:q:`). */
export function carriedCounterKey(key: string, carry: string): string {
  return `${key.slice(0, key.lastIndexOf(":q:") + 3)}${carry}`;
}
