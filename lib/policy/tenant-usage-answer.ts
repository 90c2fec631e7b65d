/**
 * The answer of `GET /v1/usage` (a tenant-scoped read token) and of the customer portal, built from
 * the compiled policy and counter values: pure, so the decision server and the portal show the same
 * numbers from the same counters that decide (each tenant's billing periods and plan changes, as
 * the decision path counts them: lib/policy/quota-window.ts).
 *
 * Two steps: `usageReadPlan` says which counters to read (each quota's counter key for its current
 * period, and the old tier's counter a plan change carries); `buildUsageAnswer` turns what was
 * read into the answer. Nothing of another tenant is named in either.
 */
import { billingPeriod } from "./billing-period";
import type { CompiledLimit, CompiledPolicyBody, CompiledQuota } from "./compiled";
import { counterKeys } from "./counter-keys";
import { carriedQuota, DEFAULT_PLAN_CHANGE_RULE, quotaAllowance } from "./plan-change";
import { tenantQuotasAt } from "./publish-stamps";
import { ANY_OPERATION, type Period } from "./types";

/** Thresholds when neither the tier nor the tenant sets any: 80 % and 100 % of each quota. */
export const DEFAULT_THRESHOLDS: readonly number[] = [80, 100];

export interface QuotaRead {
  quota: CompiledQuota;
  period: { startMs: number; endMs: number; label: string };
  /** The counter the store counts this period into. */
  counterKey: string;
  /** The old tier's counter a plan change in this period carries (U_before), or null. */
  carriedKey: string | null;
  changeAtMs: number | null;
}

export interface UsageReadPlan {
  tenant: string;
  tier: string;
  limits: CompiledLimit[];
  quotas: QuotaRead[];
  thresholds: readonly number[];
}

/** The tenant's limits at `nowMs`: its tier's, each (operation, scope) replaced by an unexpired override. */
function tenantLimitsAt(doc: CompiledPolicyBody, slug: string, nowMs: number): CompiledLimit[] {
  const t = doc.tenants[slug]!;
  const overrides = t.overrides.flatMap((o) => (o.kind === "limit" && (o.expiresAtMs === null || o.expiresAtMs > nowMs) ? [o.limit] : []));
  const base = doc.tiers[t.tier]?.limits ?? [];
  return [...base.filter((l) => !overrides.some((o) => o.operation === l.operation && o.scope === l.scope)), ...overrides];
}

/** The thresholds of a tenant: its own, else its tier's, else the default. */
export function thresholdsOf(doc: CompiledPolicyBody, slug: string): readonly number[] {
  const t = doc.tenants[slug];
  return t?.thresholds ?? (t ? doc.tiers[t.tier]?.thresholds : undefined) ?? DEFAULT_THRESHOLDS;
}

/** Which counters the answer for `slug` at `nowMs` needs; null for a tenant the document does not have. */
export function usageReadPlan(
  doc: CompiledPolicyBody,
  slug: string,
  nowMs: number,
  prefix: string,
): UsageReadPlan | null {
  const t = Object.hasOwn(doc.tenants, slug) ? doc.tenants[slug] : undefined;
  if (!t || !Object.hasOwn(doc.tiers, t.tier)) return null;
  const quotas = tenantQuotasAt(doc, t, nowMs).map((quota): QuotaRead => {
    const period = billingPeriod(nowMs, quota.period, t.billing ?? null, t.billingChange);
    const counterKey = `${counterKeys.quota(slug, quota.id, prefix)}:${period.label}`;
    const change = t.planChange;
    const carried = carriedQuota(change, quota.operation, quota.period);
    const inPeriod = change !== undefined && change.atMs > period.startMs && change.atMs < period.endMs;
    // The old tier counted into the period that held the instant before the change: the same one.
    const carriedKey = carried && inPeriod && carried.quotaId !== quota.id ? `${counterKeys.quota(slug, carried.quotaId, prefix)}:${period.label}` : null;
    return { quota, period, counterKey, carriedKey, changeAtMs: inPeriod ? change.atMs : null };
  });
  return { tenant: slug, tier: t.tier, limits: tenantLimitsAt(doc, slug, nowMs), quotas, thresholds: thresholdsOf(doc, slug) };
}

export interface UsageQuotaRow {
  /** `<tier>-[<operation>-]<period>`, as RateLimit-Policy names it. */
  name: string;
  quotaId: string;
  operation: string;
  period: Period;
  /** What the tenant may use this period (after a plan change: lib/policy/plan-change.ts). */
  limit: number;
  used: number;
  /** limit − used, never below 0: the units a check may still take. */
  remaining: number;
  overage: CompiledQuota["overage"];
  /** Units used above the limit (overage: bill). */
  overageUnits: number;
  resetAtMs: number;
  resetSeconds: number;
  periodStart: string;
  periodEnd: string;
  periodLabel: string;
  thresholds: number[];
  /** The thresholds (percent of `limit`) that `used` has reached. */
  thresholdsCrossed: number[];
}

export interface UsageLimitRow {
  name: string;
  operation: string;
  scope: CompiledLimit["scope"];
  algorithm: CompiledLimit["algorithm"];
  limit: number;
  windowSeconds: number;
  /** Tenant-wide limits: `limit − remaining` (units the window or bucket holds now); null where `remaining` is. */
  used: number | null;
  /** What the store's peek answered for a tenant-wide limit; null for per-key, per-address and global limits (no one counter for the tenant). */
  remaining: number | null;
  resetAtMs: number | null;
  /** Seconds from `asOf` to `resetAtMs`, rounded up; null where `resetAtMs` is. */
  resetSeconds: number | null;
}

export interface TenantUsageAnswer {
  tenant: string;
  tier: string;
  asOf: string;
  limits: UsageLimitRow[];
  quotas: UsageQuotaRow[];
}

/** `threshold` percent of `limit` has been reached by `used` (integers: no float at the boundary). */
export const crossed = (used: number, limit: number, threshold: number) => limit > 0 && used * 100 >= threshold * limit;

export function buildUsageAnswer(
  doc: CompiledPolicyBody,
  plan: UsageReadPlan,
  reads: { counters: ReadonlyMap<string, number>; limitPeeks?: ReadonlyMap<string, { remaining: number; resetAtMs: number }> },
  nowMs: number,
): TenantUsageAnswer {
  const rule = doc.defaults.planChange ?? DEFAULT_PLAN_CHANGE_RULE;
  const value = (key: string | null) => (key === null ? 0 : Math.max(0, reads.counters.get(key) ?? 0));
  const quotas = plan.quotas.map((r): UsageQuotaRow => {
    const q = r.quota;
    const usedBefore = value(r.carriedKey);
    const allowance = quotaAllowance({ limit: q.limit, rule: doc.tenants[plan.tenant]?.planChange?.rule ?? rule, period: r.period, changeAtMs: r.changeAtMs, usedBefore });
    const used = value(r.counterKey) + allowance.usedBefore;
    const limit = allowance.periodLimit;
    return {
      name: `${plan.tier}-${q.operation === ANY_OPERATION ? "" : `${q.operation}-`}${q.period}`,
      quotaId: q.id,
      operation: q.operation,
      period: q.period,
      limit,
      used,
      remaining: Math.max(0, limit - used),
      overage: q.overage,
      overageUnits: q.overage === "bill" ? Math.max(0, used - limit) : 0,
      resetAtMs: r.period.endMs,
      resetSeconds: Math.max(0, Math.ceil((r.period.endMs - nowMs) / 1000)),
      periodStart: new Date(r.period.startMs).toISOString(),
      periodEnd: new Date(r.period.endMs).toISOString(),
      periodLabel: r.period.label,
      thresholds: [...plan.thresholds],
      thresholdsCrossed: plan.thresholds.filter((t) => crossed(used, limit, t)),
    };
  });
  const limits = plan.limits.map((l): UsageLimitRow => {
    const peek = l.scope === "tenant" ? reads.limitPeeks?.get(l.id) : undefined;
    return {
      name: l.name,
      operation: l.operation,
      scope: l.scope,
      algorithm: l.algorithm,
      limit: l.limit,
      windowSeconds: l.algorithm === "concurrency" ? 0 : Math.ceil(l.windowMs / 1000),
      used: peek ? Math.max(0, l.limit - peek.remaining) : null,
      remaining: peek ? peek.remaining : null,
      resetAtMs: peek ? peek.resetAtMs : null,
      resetSeconds: peek ? Math.max(0, Math.ceil((peek.resetAtMs - nowMs) / 1000)) : null,
    };
  });
  return { tenant: plan.tenant, tier: plan.tier, asOf: new Date(nowMs).toISOString(), limits, quotas };
}
