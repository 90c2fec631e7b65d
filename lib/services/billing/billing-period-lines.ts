/**
 * The billing lines of tenants on their own billing period (docs/billing-periods.md, "The export of
 * an anchored tenant"). A month holds, for such a tenant, each of its periods whose last local day
 * falls in the month (lib/policy/billing-month.ts), one line per quota in force during the period,
 * used or not, with the period's dates. The figures are the quota usage rows of the period's own
 * label, the counter's (lib/jobs/rollup.ts writes them beside the UTC rows):
 *
 *   month quota   the row `<label>`; for the UTC calendar period a billing change cut short (label
 *                 `2026-11`, ending at the change) the UTC month row minus `2026-11#own`, the part
 *                 of that month the tenant spent in its own periods;
 *   day quota     every day row of the period's zone (`2026-11-20@<zone>`, or `2026-11-20` in UTC)
 *                 whose local noon falls in the period, each day's overage on its own.
 *
 * Tenants on the UTC calendar month keep their lines of lib/services/billing/billing-statement.ts.
 */
import { quotaUsageOfTenant, tierHistoryOfRange, type Client, type QuotaUsageRow } from "../../db/billing-repo";
import type { PolicyAt, PolicyQuotaDoc, QuotaDef } from "../../db/quota-defs";
import { isCalendarMonth, labelZone, OWN_SHARE_SUFFIX, periodsEndingInMonth, type TenantBillingState, type TenantPeriod } from "../../policy/billing-month";
import { startOfLocalDay } from "../../policy/zoned-time";
import type { LinePeriod, StatementLine } from "./statement";

const DAY_MS = 86_400_000;

/** The billing `slug` has at `atMs` by the published history (newest first); null before it exists. */
export function tenantBillingAt(all: readonly PolicyAt[], slug: string): (atMs: number) => TenantBillingState | null {
  return (atMs) => {
    const t = all.find((v) => v.createdAtMs <= atMs)?.doc.tenants[slug];
    return t ? { billing: t.billing ?? null, change: t.billingChange ?? null } : null;
  };
}

/** The tenants exported by their own periods in `month`, each with its periods ending in it. */
export function tenantPeriodsOfMonth(all: readonly PolicyAt[], month: string): Map<string, TenantPeriod[]> {
  const slugs = new Set<string>();
  for (const v of all) for (const [slug, t] of Object.entries(v.doc.tenants)) if (t.billing || t.billingChange) slugs.add(slug);
  const out = new Map<string, TenantPeriod[]>();
  for (const slug of [...slugs].sort()) {
    const periods = periodsEndingInMonth(month, tenantBillingAt(all, slug));
    if (periods.length > 0 && !isCalendarMonth(periods, month)) out.set(slug, periods);
  }
  return out;
}

export function linePeriod(p: TenantPeriod): LinePeriod {
  return { label: p.label, timeZone: p.timeZone, start: p.startDate, end: p.endDate, startAt: new Date(p.startMs).toISOString(), endAt: new Date(p.endMs).toISOString() };
}

/** The instant a day row's local noon falls on (its day, whatever the zone's changes); null: not a day label. */
export function dayRowNoonMs(label: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})(T\d{6})?(@.+)?$/.exec(label);
  if (!m) return null;
  return startOfLocalDay(Number(m[1]), Number(m[2]), Number(m[3]), labelZone(label)) + DAY_MS / 2;
}

/** The UTC months whose rows may hold a period's usage (labels carry local or UTC dates). */
function monthsOf(periods: readonly TenantPeriod[]): string[] {
  const out = new Set<string>();
  for (const p of periods) for (let t = p.startMs - DAY_MS; t < p.endMs + DAY_MS; t += DAY_MS) out.add(new Date(t).toISOString().slice(0, 7));
  return [...out].sort();
}

export interface PeriodLineDeps {
  /** The tier each quota id belongs to, and its definition (quotaCatalog). */
  catalog: Map<string, { def: QuotaDef; tier: string }>;
  names: Map<string, { name: string; tier: string }>;
  /** tenant × quota in force during [startMs, endMs) (quotasInForce). */
  inForce: (startMs: number, endMs: number) => { defs: Map<string, QuotaDef>; lastDoc: Map<string, PolicyQuotaDoc> };
  /** tenant × quota whose override was in force during [startMs, endMs). */
  overridden: (startMs: number, endMs: number) => Set<string>;
}

export interface PeriodLine extends StatementLine {
  deniedAnyReason: number;
  billingPeriod: LinePeriod;
}

interface Figures {
  used: bigint;
  denied: bigint;
  deniedAnyReason: bigint;
  overage: bigint;
}

/** What one period's rows say of one quota. */
function figuresOf(rows: readonly QuotaUsageRow[], def: QuotaDef, p: TenantPeriod): Figures {
  const f: Figures = { used: 0n, denied: 0n, deniedAnyReason: 0n, overage: 0n };
  const add = (r: QuotaUsageRow, sign: bigint) => {
    f.used += sign * r.used;
    f.denied += sign * r.quotaDenied;
    f.deniedAnyReason += sign * r.denied;
  };
  const limit = BigInt(def.limit);
  for (const r of rows) {
    if (def.period === "month") {
      if (r.period === p.label) add(r, 1n);
      else if (!p.label.includes("@") && r.period === `${p.label}${OWN_SHARE_SUFFIX}`) add(r, -1n);
      continue;
    }
    // Every tenant also has UTC day rows: a period counts the days of its own zone only.
    const noon = labelZone(r.period) === p.timeZone ? dayRowNoonMs(r.period) : null;
    if (noon === null || noon < p.startMs || noon >= p.endMs) continue;
    add(r, 1n);
    if (def.overage === "bill" && r.used > limit) f.overage += r.used - limit;
  }
  if (def.period === "month" && def.overage === "bill" && f.used > limit) f.overage = f.used - limit;
  return f;
}

/** One tenant's lines for its periods ending in the month, sorted by quota id, then period. */
export async function periodLines(client: Client, tenant: string, periods: readonly TenantPeriod[], deps: PeriodLineDeps): Promise<PeriodLine[]> {
  const rows = await quotaUsageOfTenant(client, tenant, monthsOf(periods));
  const lines: PeriodLine[] = [];
  for (const p of periods) {
    const inForce = deps.inForce(p.startMs, p.endMs);
    const overridden = deps.overridden(p.startMs, p.endMs);
    const ids = new Set<string>();
    for (const k of inForce.defs.keys()) if (k.startsWith(`${tenant}\u0000`)) ids.add(k.slice(tenant.length + 1));
    for (const r of rows) if (deps.catalog.has(r.quotaId) && figuresOf([r], deps.catalog.get(r.quotaId)!.def, p).used !== 0n) ids.add(r.quotaId);
    const history = await tierHistoryOfRange(client, tenant, { startMs: p.startMs, endMs: p.endMs, timeZone: p.timeZone });
    for (const quotaId of [...ids].sort()) {
      const info = deps.catalog.get(quotaId);
      const def = inForce.defs.get(`${tenant}\u0000${quotaId}`) ?? info?.def;
      if (!def) continue;
      const f = figuresOf(
        rows.filter((r) => r.quotaId === quotaId),
        def,
        p,
      );
      const tenantInfo = deps.names.get(tenant);
      lines.push({
        tenant,
        tenantName: tenantInfo?.name ?? inForce.lastDoc.get(tenant)?.tenants[tenant]?.name ?? tenant,
        tier: info?.tier ?? tenantInfo?.tier ?? "",
        tierHistory: history,
        quotaId,
        operation: def.operation,
        quotaPeriod: def.period,
        limit: def.limit,
        overage: def.overage,
        used: Number(f.used),
        overageUnits: Number(f.overage),
        denied: Number(f.denied),
        deniedAnyReason: Number(f.deniedAnyReason),
        tenantOverride: overridden.has(`${tenant}\u0000${quotaId}`),
        billingPeriod: linePeriod(p),
      });
    }
  }
  return lines;
}
