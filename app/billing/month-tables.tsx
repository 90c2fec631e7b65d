/** The Billing page's two tables of a month: totals per tenant, and the export's lines (tenant × quota). */
import Link from "next/link";
import type { Column } from "@/components/data-table";
import { SortableDataTable } from "@/components/sortable-data-table";
import { EmptyState } from "@/components/ui";
import type { OverviewLine, TenantTotal } from "@/lib/services/billing/billing-overview";

const n = (x: number) => x.toLocaleString("en-US");

const TENANT_COLUMNS: Column[] = [
  { key: "tenant", label: "tenant" },
  { key: "tier", label: "tier" },
  { key: "used", label: "used (units, all operations, month)", align: "right", className: "tabular-nums", firstDir: "desc" },
  { key: "overage", label: "overage (units)", align: "right", className: "tabular-nums", firstDir: "desc" },
  { key: "denied", label: "denied by quotas (requests)", align: "right", className: "tabular-nums", firstDir: "desc" },
  { key: "reconciliation", label: "reconciliation", sortable: false },
];

const LINE_COLUMNS: Column[] = [
  { key: "tenant", label: "tenant" },
  { key: "quota", label: "quota" },
  { key: "used", label: "used / included (units)", align: "right", className: "tabular-nums whitespace-nowrap", firstDir: "desc" },
  { key: "overage", label: "overage (units)", align: "right", className: "tabular-nums", firstDir: "desc" },
  { key: "denied", label: "denied by this quota", align: "right", className: "tabular-nums", firstDir: "desc" },
];

function Reconciliation({ t }: { t: TenantTotal }) {
  const r = t.reconciliation;
  if (t.drifted > 0) {
    return (
      <span className="text-red-700" data-testid="tenant-drift">
        ✗ enforcement’s counter differs from the export on {t.drifted} line{t.drifted === 1 ? "" : "s"} (see above)
      </span>
    );
  }
  if (!r) return <span className="text-slate-400">—</span>;
  if (r.ok) {
    return (
      <span className="text-green-700" title={`rollups ${r.rollups} passed requests; quota usage ${r.quotaUsage ?? "—"} units; export ${r.exported ?? "—"} units`}>
        ✓ {n(r.rollups)} requests → {n(r.quotaUsage ?? 0)} units = export
      </span>
    );
  }
  return (
    <span className="text-red-700" data-testid="tenant-reconcile-failed">
      differs: rollups {n(r.rollups)} requests, quota {r.quotaUsage ?? "—"} units, export {r.exported ?? "—"} units
    </span>
  );
}

export function TenantTable({ tenants }: { tenants: readonly TenantTotal[] }) {
  return (
    <SortableDataTable
      testId="billing-tenants"
      columns={TENANT_COLUMNS}
      empty={<EmptyState title="No tenant had a quota in force this month." />}
      rows={tenants.map((t) => ({
        key: t.tenant,
        testId: `billing-tenant-${t.tenant}`,
        values: { tenant: t.tenant, used: t.used, overage: t.overageUnits, denied: t.quotaDenied },
        cells: {
          tenant: (
            <Link className="text-indigo-700 hover:underline" href={`/tenants/${t.tenant}`}>
              {t.tenantName} <span className="font-mono text-xs text-slate-500">{t.tenant}</span>
            </Link>
          ),
          tier: t.tier,
          used: n(t.used),
          overage: n(t.overageUnits),
          denied: n(t.quotaDenied),
          reconciliation: <Reconciliation t={t} />,
        },
      }))}
    />
  );
}

export function LineTable({ lines }: { lines: readonly OverviewLine[] }) {
  return (
    <SortableDataTable
      testId="billing-lines"
      columns={LINE_COLUMNS}
      rows={lines.map((l) => ({
        key: `${l.lineType}/${l.tenant}/${l.quotaId}/${l.billingPeriod?.label ?? ""}/${"revision" in l ? String(l.revision) : ""}`,
        values: { tenant: l.tenant, quota: l.quotaName, used: l.used, overage: l.overageUnits, denied: l.denied },
        cells: {
          tenant: l.tenant,
          quota: (
            <>
              {l.quotaName}
              {l.override && <span className="badge ml-1 bg-amber-100 text-amber-800">tenant override</span>}
              {l.lineType === "adjustment" && <span className="badge ml-1">late adjustment</span>}
              {l.billingPeriod && (
                <div className="text-xs text-slate-600" data-testid="line-period" title={`${l.billingPeriod.startAt} to ${l.billingPeriod.endAt} (${l.billingPeriod.label})`}>
                  period {l.billingPeriod.start} – {l.billingPeriod.end} ({l.billingPeriod.timeZone})
                </div>
              )}
              <div className="font-mono text-[11px] text-slate-400">quota_id {l.quotaId}</div>
            </>
          ),
          used: (
            <>
              {`${n(l.used)} / ${n(l.limit)}${l.quotaPeriod === "day" ? " a day" : ""}`}
              {l.drift.map((d) => (
                <div key={d.period} className="text-xs text-red-700" data-testid="line-drift" title={d.why}>
                  ✗ enforcement counted {n(d.redis)} ({d.period})
                </div>
              ))}
            </>
          ),
          overage: l.overage === "bill" ? n(l.overageUnits) : <span className="text-slate-400">blocked, none</span>,
          denied: n(l.denied),
        },
      }))}
    />
  );
}
