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
 * A month closed before quota denials were recorded (a frozen line or adjustment whose
 * quotaDenied is null) exports its old any-reason `denied`: its denials are then not compared.
 */
import type { Db } from "../db/client";
import { monthRangeMs } from "../db/billing-repo";
import { pgTs } from "../db/usage-repo";
import { buildStatement } from "./billing-statement";

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
  const legacy =
    (await db.billingLine.count({ where: { period: month, quotaDenied: null } })) +
      (await db.billingAdjustment.count({ where: { period: month, quotaDenied: null } })) >
    0;
  const tenants = new Set([...rollups.map((r) => r.tenant), ...allOps.map((l) => l.tenant)]);
  const rows: ReconcileRow[] = [...tenants].sort().map((tenant) => {
    const r = Number(rollups.find((x) => x.tenant === tenant)?.n ?? 0n);
    const lines = allOps.filter((l) => l.tenant === tenant);
    const q = usage.filter((u) => u.tenant === tenant);
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
