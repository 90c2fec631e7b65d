/**
 * Billing reconciliation for a month, per tenant: the decisions the decision servers counted as
 * passed (their per-minute aggregates, as drained into the rollups), the quota usage kept from
 * them, and the exported totals (usage lines + adjustments) of the tenant's all-operations monthly
 * quotas. Quotas count units (a decision's cost, at least 1), the rollups decisions: quota usage
 * equals the passed decisions when every cost was 1, and is never below them; it must equal the
 * export exactly. The same for the requests those quotas denied: the quota denials the decision servers
 * counted (kept in QuotaUsage.quotaDenied) against the export's `denied`. Any difference fails the
 * check and is shown on the Billing page.
 *
 * A tenant on its own billing periods (lines with a billingPeriod) is compared over those periods:
 * its passed decisions in the hourly rollups of the periods' spans, its quota usage in the rows of
 * the periods' labels (for a UTC month a billing change cut short, the month row less its `#own`
 * share, as the export reads it).
 *
 * A month closed before quota denials were recorded (a frozen line or adjustment whose
 * quotaDenied is null) exports its old any-reason `denied`: its denials are then not compared.
 */
import type { Db } from "../../db/client";
import { monthRangeMs } from "../../db/billing-repo";
import { pgTs } from "../../db/usage-repo";
import { OWN_SHARE_SUFFIX } from "../../policy/billing-month";
import type { StatementLine } from "./statement";
import { buildStatement } from "./billing-statement";

/** Passed decisions of one tenant in the hourly rollups of its periods' spans. */
async function rollupsOfPeriods(db: Db, tenant: string, lines: readonly StatementLine[]): Promise<number> {
  const spans = new Map(lines.flatMap((l) => (l.billingPeriod ? [[l.billingPeriod.label, l.billingPeriod] as const] : [])));
  let total = 0n;
  for (const p of spans.values()) {
    const [row] = await db.$queryRawUnsafe<{ n: bigint | null }[]>(
      `SELECT sum("count")::bigint AS n FROM "UsageRollup"
        WHERE "granularity" = 'hour' AND "bucketStart" >= $1::timestamp(3) AND "bucketStart" < $2::timestamp(3)
          AND "keyPrefix" = '' AND "tenant" = $3 AND "outcome" <> 'denied'`,
      pgTs(Date.parse(p.startAt)),
      pgTs(Date.parse(p.endAt)),
      tenant,
    );
    total += row?.n ?? 0n;
  }
  return Number(total);
}

/** The quota usage rows a tenant period's line is read from, each with its sign. */
function periodRowSigns(l: StatementLine): [string, number][] {
  const label = l.billingPeriod!.label;
  return label.includes("@") ? [[label, 1]] : [[label, 1], [`${label}${OWN_SHARE_SUFFIX}`, -1]];
}

export interface ReconcileRow {
  tenant: string;
  /** Passed decisions (allowed + shadow-denied + degraded) in the rollups. */
  rollups: number;
  /** Used units (decisions × their cost) of the tenant's `*` monthly quotas in QuotaUsage; null when it has none. */
  quotaUsage: number | null;
  /** Exported used of those quotas (lines + adjustments); null when it has none. */
  exported: number | null;
  /** Requests those quotas denied, as counted (QuotaUsage.quotaDenied); null when it has none. */
  quotaDenials: number | null;
  /** The export's `denied` for those quotas; null when it has none or the month predates the count. */
  exportedDenied: number | null;
  ok: boolean;
}

export async function reconcileBilling(db: Db, month: string): Promise<{ period: string; ok: boolean; rows: ReconcileRow[] }> {
  const { startMs, endMs } = monthRangeMs(month);
  const rollups = await db.$queryRawUnsafe<{ tenant: string; n: bigint }[]>(
    `SELECT "tenant", sum("count")::bigint AS n FROM "UsageRollup"
      WHERE "granularity" = 'day' AND "bucketStart" >= $1::timestamp(3) AND "bucketStart" < $2::timestamp(3)
        AND "keyPrefix" = '' AND "tenant" NOT IN ('', '_') AND "tenant" NOT LIKE '*:%' AND "outcome" <> 'denied'
      GROUP BY 1`,
    pgTs(startMs),
    pgTs(endMs),
  );
  const statement = await buildStatement(db, month);
  const allOps = [...statement.lines, ...statement.adjustments].filter((l) => l.operation === "*" && l.quotaPeriod === "month");
  const quotaIds = new Set(allOps.map((l) => l.quotaId));
  const usage = await db.quotaUsage.findMany({ where: { period: month, quotaId: { in: [...quotaIds] } } });
  const ownLabels = [...new Set(allOps.flatMap((l) => (l.billingPeriod ? periodRowSigns(l).map(([p]) => p) : [])))];
  const ownRows = ownLabels.length ? await db.quotaUsage.findMany({ where: { period: { in: ownLabels }, quotaId: { in: [...quotaIds] } } }) : [];
  const anchored = new Set(allOps.filter((l) => l.billingPeriod).map((l) => l.tenant));
  const periodRollups = new Map<string, number>();
  for (const tenant of anchored) periodRollups.set(tenant, await rollupsOfPeriods(db, tenant, allOps.filter((l) => l.tenant === tenant)));
  const legacy =
    (await db.billingLine.count({ where: { period: month, quotaDenied: null } })) +
      (await db.billingAdjustment.count({ where: { period: month, quotaDenied: null } })) >
    0;
  const tenants = new Set([...rollups.map((r) => r.tenant), ...allOps.map((l) => l.tenant)]);
  // A tenant period's rows, the `#own` share negated: what its lines were read from (once per quota and label).
  const signedRows = (tenant: string) => {
    const wanted = new Map<string, number>();
    for (const l of allOps) if (l.tenant === tenant && l.billingPeriod) for (const [p, sign] of periodRowSigns(l)) wanted.set(`${l.quotaId}\u0000${p}`, sign);
    return ownRows
      .filter((u) => u.tenant === tenant && wanted.has(`${u.quotaId}\u0000${u.period}`))
      .map((u) => {
        const sign = BigInt(wanted.get(`${u.quotaId}\u0000${u.period}`)!);
        return { used: sign * u.used, quotaDenied: sign * u.quotaDenied };
      });
  };
  const rows: ReconcileRow[] = [...tenants].sort().map((tenant) => {
    const r = periodRollups.get(tenant) ?? Number(rollups.find((x) => x.tenant === tenant)?.n ?? 0n);
    const lines = allOps.filter((l) => l.tenant === tenant);
    const q = anchored.has(tenant) ? signedRows(tenant) : usage.filter((u) => u.tenant === tenant);
    const quotaUsage = lines.length || q.length ? q.reduce((s, u) => s + Number(u.used), 0) : null;
    const exported = lines.length ? lines.reduce((s, l) => s + l.used, 0) : null;
    const quotaDenials = lines.length || q.length ? q.reduce((s, u) => s + Number(u.quotaDenied), 0) : null;
    const exportedDenied = lines.length && !legacy ? lines.reduce((s, l) => s + l.denied, 0) : null;
    const ok =
      (quotaUsage === null || quotaUsage >= r) &&
      (exported === null || quotaUsage === null || exported === quotaUsage) &&
      (exportedDenied === null || quotaDenials === null || exportedDenied === quotaDenials);
    return { tenant, rollups: r, quotaUsage, exported, quotaDenials, exportedDenied, ok };
  });
  return { period: month, ok: rows.every((r) => r.ok), rows };
}
