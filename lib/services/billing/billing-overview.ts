/**
 * What the Billing page shows of a month: when it closes and what its status means, its lines with
 * each quota named (operation, allowance, period; a tenant's own override marked), per-tenant
 * totals, the reconciliation of rollups, quota usage and the export, whether the month is closed
 * (and why not when it is overdue), and where enforcement's counters differ from the export (on the
 * line, with both numbers, the cause and what to do). Read-only; the figures are the export's
 * (buildStatement), so the page and the file agree.
 */
import type { Db } from "../../db/client";
import { quotaLabel } from "../../policy/labels";
import type { StatementLine } from "./statement";
import { closeStatus, type CloseStatus } from "./billing-close-status";
import { reconcileBilling, type ReconcileRow } from "./billing-reconcile";
import { quotaDrift, type ExplainedDrift, type PeriodDrift } from "./quota-drift";
import { buildStatement } from "./billing-statement";

export interface OverviewLine extends StatementLine {
  /** "all operations · 2,000,000 units per month · overage billed". */
  quotaName: string;
  /** The tenant's own override of its tier's quota (same id, another allowance). */
  override: boolean;
  lineType: "usage" | "adjustment";
  /** Where enforcement's counter differs from this line's usage (usage lines of the open month only). */
  drift: ExplainedDrift[];
}

export interface TenantTotal {
  tenant: string;
  tenantName: string;
  tier: string;
  /** Units used on the tenant's all-operations monthly quotas (the same units as the export). */
  used: number;
  /** Overage units over all its quotas (billable where overage is billed). */
  overageUnits: number;
  /** Requests its quotas denied (quota denials only). */
  quotaDenied: number;
  reconciliation: ReconcileRow | null;
  /** Lines of the tenant whose enforcement counter differs from the export. */
  drifted: number;
}

export interface BillingOverview {
  period: string;
  status: "provisional" | "final";
  /** When the worker closes (closed) the month: its end (or its last tenant period's) plus BILLING_GRACE_MS. */
  closesAt: string;
  close: CloseStatus;
  drift: PeriodDrift;
  lines: OverviewLine[];
  tenants: TenantTotal[];
  reconciliationOk: boolean;
}

export async function billingOverview(db: Db, period: string, { graceMs, nowMs }: { graceMs: number; nowMs: number }): Promise<BillingOverview> {
  const statement = await buildStatement(db, period);
  const drift = await quotaDrift(db, period, { nowMs });
  const named = (l: StatementLine, lineType: OverviewLine["lineType"]): OverviewLine => ({
    ...l,
    quotaName: quotaLabel({ operation: l.operation, period: l.quotaPeriod, limit: l.limit, overage: l.overage }),
    // The same mark as the export's tenant_override: the override was in force during the month.
    override: l.tenantOverride,
    lineType,
    drift: lineType === "usage" ? drift.differences.filter((d) => d.tenant === l.tenant && d.quotaId === l.quotaId) : [],
  });
  const lines = [...statement.lines.map((l) => named(l, "usage")), ...statement.adjustments.map((a) => named(a, "adjustment"))];
  const report = await reconcileBilling(db, period);
  const close = await closeStatus(db, period, { status: statement.status, nowMs, graceMs });
  const byTenant = new Map<string, TenantTotal>();
  for (const l of lines) {
    const t = byTenant.get(l.tenant) ?? { tenant: l.tenant, tenantName: l.tenantName, tier: l.tier, used: 0, overageUnits: 0, quotaDenied: 0, reconciliation: null, drifted: 0 };
    if (l.drift.length > 0) t.drifted += 1;
    if (l.operation === "*" && l.quotaPeriod === "month") t.used += l.used;
    t.overageUnits += l.overageUnits;
    t.quotaDenied += l.denied;
    byTenant.set(l.tenant, t);
  }
  for (const r of report.rows) {
    const t = byTenant.get(r.tenant);
    if (t) t.reconciliation = r;
  }
  return {
    period,
    status: statement.status,
    closesAt: new Date(close.closesAtMs).toISOString(),
    close,
    drift,
    lines,
    tenants: [...byTenant.values()].sort((a, b) => a.tenant.localeCompare(b.tenant)),
    reconciliationOk: report.ok,
  };
}
