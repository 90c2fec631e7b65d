/**
 * Data access for billing: quota usage of a month, tier history from the rollups, frozen lines,
 * adjustments and the period rows. Works on the client or inside a transaction.
 */
import { isoDate, localDate } from "../policy/zoned-time";
import type { Db, Tx } from "./client";

export type Client = Db | Tx;

/** `2026-11` → [start, end) in ms, UTC. */
export function monthRangeMs(month: string): { startMs: number; endMs: number } {
  const [y, m] = month.split("-").map(Number) as [number, number];
  return { startMs: Date.UTC(y, m - 1, 1), endMs: Date.UTC(y, m, 1) };
}

export function monthOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

export interface QuotaUsageRow {
  tenant: string;
  quotaId: string;
  period: string;
  used: bigint;
  /** Denied for any reason on the operations the quota covers. */
  denied: bigint;
  /** Denied by this quota. */
  quotaDenied: bigint;
}

/** Quota usage rows of a month: the month period itself and its UTC days (not a tenant's own `…@<zone>` periods). */
export async function quotaUsageOfMonth(client: Client, month: string): Promise<QuotaUsageRow[]> {
  return client.quotaUsage.findMany({
    where: { OR: [{ period: month }, { period: { startsWith: `${month}-` } }], NOT: { period: { contains: "@" } } },
    select: { tenant: true, quotaId: true, period: true, used: true, denied: true, quotaDenied: true },
    orderBy: [{ tenant: "asc" }, { quotaId: "asc" }, { period: "asc" }],
  });
}

export interface TierSpan {
  tier: string;
  /** First and last UTC day (YYYY-MM-DD) the tenant's decisions were made under this tier. */
  from: string;
  to: string;
}

/**
 * The tiers each tenant's decisions ran under during a month, with dates, from the hourly rollups
 * (the decision servers stamp every decision with the tenant's tier at that moment).
 */
export async function tierHistoryOfMonth(client: Client, month: string): Promise<Map<string, TierSpan[]>> {
  const { startMs, endMs } = monthRangeMs(month);
  const rows = await client.$queryRawUnsafe<{ tenant: string; tier: string; first: Date; last: Date }[]>(
    `SELECT "tenant", "tier", min("bucketStart") AS first, max("bucketStart") AS last
       FROM "UsageRollup"
      WHERE "granularity" = 'hour' AND "bucketStart" >= $1::timestamp(3) AND "bucketStart" < $2::timestamp(3)
        AND "keyPrefix" = '' AND "tenant" <> '' AND "tenant" NOT LIKE '*:%' AND "tier" <> ''
      GROUP BY "tenant", "tier"`,
    new Date(startMs).toISOString().replace("T", " ").replace("Z", ""),
    new Date(endMs).toISOString().replace("T", " ").replace("Z", ""),
  );
  const out = new Map<string, TierSpan[]>();
  for (const r of rows) {
    const spans = out.get(r.tenant) ?? [];
    spans.push({ tier: r.tier, from: r.first.toISOString().slice(0, 10), to: r.last.toISOString().slice(0, 10) });
    out.set(r.tenant, spans);
  }
  for (const spans of out.values()) spans.sort((a, b) => a.from.localeCompare(b.from) || a.to.localeCompare(b.to) || a.tier.localeCompare(b.tier));
  return out;
}

/** Every quota usage row of `tenant` whose label starts with one of `months` (`YYYY-MM`): its own periods' rows too. */
export async function quotaUsageOfTenant(client: Client, tenant: string, months: readonly string[]): Promise<QuotaUsageRow[]> {
  return client.quotaUsage.findMany({
    where: { tenant, OR: months.map((m) => ({ period: { startsWith: m } })) },
    select: { tenant: true, quotaId: true, period: true, used: true, denied: true, quotaDenied: true },
    orderBy: [{ quotaId: "asc" }, { period: "asc" }],
  });
}

/**
 * The tiers one tenant's decisions ran under in [startMs, endMs), with the local dates (in
 * `timeZone`) of the first and last hour under each, from the hourly rollups.
 */
export async function tierHistoryOfRange(client: Client, tenant: string, { startMs, endMs, timeZone }: { startMs: number; endMs: number; timeZone: string }): Promise<TierSpan[]> {
  const rows = await client.$queryRawUnsafe<{ tier: string; first: Date; last: Date }[]>(
    `SELECT "tier", min("bucketStart") AS first, max("bucketStart") AS last
       FROM "UsageRollup"
      WHERE "granularity" = 'hour' AND "bucketStart" >= $1::timestamp(3) AND "bucketStart" < $2::timestamp(3)
        AND "keyPrefix" = '' AND "tenant" = $3 AND "tier" <> ''
      GROUP BY "tier"`,
    new Date(startMs).toISOString().replace("T", " ").replace("Z", ""),
    new Date(endMs).toISOString().replace("T", " ").replace("Z", ""),
    tenant,
  );
  const day = (d: Date) => isoDate(...localDate(d.getTime(), timeZone));
  return rows
    .map((r) => ({ tier: r.tier, from: day(r.first), to: day(r.last) }))
    .sort((a, b) => a.from.localeCompare(b.from) || a.to.localeCompare(b.to) || a.tier.localeCompare(b.tier));
}

export async function tenantNames(client: Client): Promise<Map<string, { name: string; tier: string }>> {
  const rows = await client.tenant.findMany({ select: { slug: true, name: true, tier: { select: { name: true } } } });
  return new Map(rows.map((r) => [r.slug, { name: r.name, tier: r.tier.name }]));
}

export async function billingPeriod(client: Client, month: string) {
  return client.billingPeriod.findUnique({ where: { period: month } });
}

export async function listBillingPeriods(client: Client) {
  return client.billingPeriod.findMany({ orderBy: { period: "desc" } });
}

/**
 * The `period` a frozen line is stored under: the month, or `<month>|<label>` for a tenant period
 * that is not the last of its tenant × quota in the month (a billing change put two in it), so the
 * key stays (period, tenant, quotaId).
 */
export function frozenLinePeriod(month: string, label: string, last: boolean): string {
  return last ? month : `${month}|${label}`;
}

export async function frozenLines(client: Client, month: string) {
  return client.billingLine.findMany({
    where: { OR: [{ period: month }, { period: { startsWith: `${month}|` } }] },
    orderBy: [{ tenant: "asc" }, { quotaId: "asc" }, { periodLabel: "asc" }],
  });
}

export async function adjustmentsOf(client: Client, month: string) {
  return client.billingAdjustment.findMany({ where: { period: month }, orderBy: [{ revision: "asc" }, { tenant: "asc" }, { quotaId: "asc" }, { periodLabel: "asc" }, { id: "asc" }] });
}

/**
 * Months that have quota usage or a period row. The UTC rows say which months had usage; a
 * tenant's own period rows (`2026-09-15@…`, `2026-09#own`) are left out, their label's month being
 * the month a period started, which is not the month whose export holds it.
 */
export async function knownMonths(client: Client): Promise<string[]> {
  const rows = await client.$queryRawUnsafe<{ month: string }[]>(
    `SELECT DISTINCT substr("period", 1, 7) AS month FROM "QuotaUsage" WHERE "period" NOT LIKE '%@%' AND "period" NOT LIKE '%#%'
     UNION SELECT "period" AS month FROM "BillingPeriod" ORDER BY month`,
  );
  return rows.map((r) => r.month);
}
