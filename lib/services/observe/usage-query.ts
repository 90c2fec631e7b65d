/**
 * The usage API's use cases (docs/observability-and-billing.md): time series by outcome and by the
 * decision API's denial reason, top consumers and quota burn
 * with a projection to period end. Query schemas live here so the routes, the dashboards and the
 * tests validate the same way.
 */
import { z } from "zod";
import type { Db } from "../../db/client";
import { monthRangeMs, quotaUsageOfMonth } from "../../db/billing-repo";
import { denialsByReason, sumDenials } from "../../db/denial-repo";
import { GRANULARITY_MS, topConsumers, usageSeries, type TopKey, type TopTenant } from "../../db/usage-repo";
import { effectiveQuotas, PolicyHistory, type QuotaDef } from "../../db/quota-defs";
import { count429, emptyDenials, type DenialsByReason } from "../../policy/denial-reasons";
import { projectQuota } from "../../policy/quota-projection";
import { periodSchema } from "../billing/billing-export";
import { quotaCatalog, quotasInForce } from "../billing/billing-statement";

/** Most points one series request may return (7 days of minutes). */
export const MAX_POINTS = 10_080;
const isoDate = z.iso.datetime({ offset: true, message: "expected an ISO 8601 date-time like 2026-12-01T00:00:00Z" });
const slug = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "expected a slug");

const range = z.object({ from: isoDate, to: isoDate });
function checkRange<T extends { from: string; to: string }>(v: T, ctx: z.RefinementCtx): void {
  if (Date.parse(v.to) <= Date.parse(v.from)) ctx.addIssue({ code: "custom", path: ["to"], message: "must be after from" });
}

export const usageQuerySchema = range
  .extend({ granularity: z.enum(["minute", "hour", "day"]), tenant: slug.optional(), tier: slug.optional() })
  .strict()
  .superRefine((v, ctx) => {
    checkRange(v, ctx);
    const points = (Date.parse(v.to) - Date.parse(v.from)) / GRANULARITY_MS[v.granularity];
    if (points > MAX_POINTS) ctx.addIssue({ code: "custom", path: ["granularity"], message: `too fine for this range (${Math.ceil(points)} points, at most ${MAX_POINTS})` });
  });
export type UsageQuery = z.infer<typeof usageQuerySchema>;

export const topQuerySchema = range
  .extend({
    by: z.enum(["requests", "denied"]).default("requests"),
    limit: z.coerce.number().int().min(1).max(100).default(10),
    tenant: slug.optional(),
  })
  .strict()
  .superRefine(checkRange);
export type TopQuery = z.infer<typeof topQuerySchema>;

export const quotasQuerySchema = z.object({ period: periodSchema, tenant: slug.optional() }).strict();
export type QuotasQuery = z.infer<typeof quotasQuerySchema>;

export interface UsagePoint {
  t: string;
  allowed: number;
  denied: number;
  shadowDenied: number;
  degraded: number;
  /** denied / all decisions of the bucket (0 when none): every denial, 401, 403, 429 and 503. */
  denyShare: number;
  /** The denials by the decision API's reason; `not_recorded`: recorded before reasons were. */
  deniedByReason: DenialsByReason;
  /** 429s (rate_limited, quota_exhausted, concurrency_limited, cost_exceeds_limit) / all decisions (0 when none). */
  share429: number;
}

export interface UsageTotals {
  decisions: number;
  denied: number;
  deniedByReason: DenialsByReason;
  share429: number;
}

const share = (part: number, all: number) => (all > 0 ? part / all : 0);

export async function getUsage(
  db: Db,
  q: UsageQuery,
): Promise<{ from: string; to: string; granularity: string; tenant: string | null; tier: string | null; points: UsagePoint[]; totals: UsageTotals }> {
  const fromMs = Date.parse(q.from);
  const toMs = Date.parse(q.to);
  const f = { fromMs, toMs, granularity: q.granularity, tenant: q.tenant, tier: q.tier };
  const points = await usageSeries(db, f);
  const deniedAt = new Map(points.map((p) => [p.bucketStartMs, p.denied]));
  const reasons = await denialsByReason(db, f, (t) => deniedAt.get(t) ?? 0);
  let decisions = 0;
  const out = points.map((p) => {
    const total = p.allowed + p.denied + p.shadowDenied + p.degraded;
    decisions += total;
    const deniedByReason = reasons.get(p.bucketStartMs) ?? emptyDenials();
    return {
      t: new Date(p.bucketStartMs).toISOString(),
      allowed: p.allowed,
      denied: p.denied,
      shadowDenied: p.shadowDenied,
      degraded: p.degraded,
      denyShare: share(p.denied, total),
      deniedByReason,
      share429: share(count429(deniedByReason), total),
    };
  });
  const deniedByReason = sumDenials(out.map((p) => p.deniedByReason));
  return {
    from: new Date(fromMs).toISOString(),
    to: new Date(toMs).toISOString(),
    granularity: q.granularity,
    tenant: q.tenant ?? null,
    tier: q.tier ?? null,
    points: out,
    totals: { decisions, denied: out.reduce((s, p) => s + p.denied, 0), deniedByReason, share429: share(count429(deniedByReason), decisions) },
  };
}

export async function getTop(db: Db, q: TopQuery): Promise<{ from: string; to: string; by: string; tenants: TopTenant[]; keys: TopKey[] }> {
  const fromMs = Date.parse(q.from);
  const toMs = Date.parse(q.to);
  const top = await topConsumers(db, { fromMs, toMs, by: q.by, limit: q.limit, tenant: q.tenant });
  return { from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString(), by: q.by, ...top };
}

export interface QuotaBurn {
  tenant: string;
  tier: string;
  quotaId: string;
  operation: string;
  period: string;
  limit: number;
  overage: "block" | "bill";
  used: number;
  remaining: number;
  /** Linear projection of `used` at period end (used / elapsed × period length). */
  projected: number;
  /** When `used` reaches the limit at the current rate (ISO), null if it does not within the period. */
  runsOutAt: string | null;
  /** used / limit. */
  usedShare: number;
  /**
   * The live policy no longer gives the tenant this quota (a publish or a rollback retired it):
   * its usage this month stays, with the limit it had while in force (as billing shows it), and it
   * is not projected: nothing counts against it any more.
   */
  retired: boolean;
}

/** Monthly quota burn per tenant and quota, most urgent first (earliest run-out, then highest share). */
export async function getQuotas(db: Db, q: QuotasQuery & { nowMs: number }): Promise<{ period: string; quotas: QuotaBurn[] }> {
  const { startMs, endMs } = monthRangeMs(q.period);
  const policies = new PolicyHistory(db);
  const policy = await policies.at(Math.min(q.nowMs, endMs - 1));
  const catalog = await quotaCatalog(policies);
  // The definition each tenant's quota had while in force this month, as the billing export names it.
  const inForce = quotasInForce(await policies.load(), startMs, endMs).defs;
  const usage = new Map<string, number>();
  for (const r of await quotaUsageOfMonth(db, q.period)) {
    if (r.period !== q.period) continue; // day quotas are not projected to month end
    if (q.tenant && r.tenant !== q.tenant) continue;
    usage.set(`${r.tenant}\u0000${r.quotaId}`, Number(r.used));
  }
  const keys = new Set(usage.keys());
  const effective = new Map<string, QuotaDef>();
  if (policy) {
    for (const slug of Object.keys(policy.doc.tenants)) {
      if (q.tenant && slug !== q.tenant) continue;
      for (const quota of effectiveQuotas(policy.doc, slug, null, Math.min(q.nowMs, endMs - 1))) {
        if (quota.period !== "month") continue;
        keys.add(`${slug}\u0000${quota.id}`);
        effective.set(`${slug}\u0000${quota.id}`, quota);
      }
    }
  }
  const out: QuotaBurn[] = [];
  for (const k of keys) {
    const [tenant, quotaId] = k.split("\u0000") as [string, string];
    const fromCatalog = catalog.get(quotaId);
    // An override shares its quota id with the tier's quota it replaces but has its own limit.
    const own = effective.get(k) ?? inForce.get(k);
    const info = own ? { def: own, tier: fromCatalog?.tier ?? "" } : fromCatalog;
    if (!info) continue;
    const retired = !effective.has(k);
    const used = usage.get(k) ?? 0;
    const limit = info.def.limit;
    const { projected, runsOutAt } = retired ? { projected: used, runsOutAt: null } : projectQuota(used, limit, startMs, endMs, q.nowMs);
    out.push({
      tenant,
      tier: info.tier,
      quotaId,
      operation: info.def.operation,
      period: q.period,
      limit,
      overage: info.def.overage,
      used,
      remaining: Math.max(0, limit - used),
      projected,
      runsOutAt: runsOutAt === null ? null : new Date(runsOutAt).toISOString(),
      usedShare: limit > 0 ? used / limit : 1,
      retired,
    });
  }
  out.sort((a, b) => {
    if (a.runsOutAt !== b.runsOutAt) {
      if (a.runsOutAt === null) return 1;
      if (b.runsOutAt === null) return -1;
      return a.runsOutAt < b.runsOutAt ? -1 : 1;
    }
    return b.usedShare - a.usedShare || a.tenant.localeCompare(b.tenant) || a.quotaId.localeCompare(b.quotaId);
  });
  return { period: q.period, quotas: out };
}
