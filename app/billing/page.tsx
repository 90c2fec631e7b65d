import type { Column } from "@/components/data-table";
import { SortableDataTable } from "@/components/sortable-data-table";
import { EmptyState, Forbidden, PageHeader, Section } from "@/components/ui";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { listBilling } from "@/lib/services/billing-export";
import { reconcileBilling } from "@/lib/services/billing-reconcile";

export const metadata = { title: "Billing · Sluice" };
export const dynamic = "force-dynamic";

const FORMATS = [
  ["csv", "CSV"],
  ["json", "JSON"],
  ["cloudevents", "CloudEvents"],
] as const;

const PERIOD_COLUMNS: Column[] = [
  { key: "period", label: "period", className: "font-medium", firstDir: "desc" },
  { key: "status", label: "status" },
  { key: "revision", label: "adjustments", align: "right", className: "tabular-nums" },
  { key: "download", label: "download", sortable: false },
  { key: "checksums", label: "checksum (sha256, last export)", className: "font-mono text-xs", sortable: false },
  { key: "reconciliation", label: "reconciliation", sortable: false },
];

export default async function BillingPage() {
  const { principal, allowed } = await pageAccess("billing.export", "/billing");
  if (!allowed) return <Forbidden role={principal.role} what="export billing data" />;
  const periods = (await listBilling(db())).slice(0, 24);
  const reports = await Promise.all(periods.slice(0, 12).map((p) => reconcileBilling(db(), p.period)));
  return (
    <>
      <PageHeader
        title="Billing"
        description="Monthly quota usage per tenant. A month is provisional until the worker closes it after the grace window; a closed month exports the same bytes every time, and late usage appears as adjustment lines."
      />
      <Section title="Periods">
        <SortableDataTable
          testId="billing-periods"
          columns={PERIOD_COLUMNS}
          empty={<EmptyState title="No usage yet">Periods appear once the worker has rolled up the first decisions.</EmptyState>}
          rows={periods.map((p) => {
            const report = reports.find((r) => r.period === p.period);
            const bad = report?.rows.filter((r) => !r.ok) ?? [];
            return {
              key: p.period,
              testId: `period-${p.period}`,
              cells: {
                period: p.period,
                status: p.status === "closed" ? `final (closed ${p.closedAt?.slice(0, 16).replace("T", " ")} UTC)` : "provisional (open)",
                revision: p.revision,
                download: (
                  <span className="flex gap-2">
                    {FORMATS.map(([format, label]) => (
                      <a key={format} className="text-indigo-700 hover:underline" href={`/api/v1/billing/exports?period=${p.period}&format=${format}`}>
                        {label}
                      </a>
                    ))}
                  </span>
                ),
                checksums: Object.entries(p.checksums)
                  .sort()
                  .map(([f, c]) => (
                    <div key={f}>
                      {f}: {c.slice(0, 16)}…
                    </div>
                  )),
                reconciliation: !report ? (
                  <span className="text-slate-400">—</span>
                ) : report.ok ? (
                  <span className="text-green-700" data-testid="reconcile-ok">rollups = quota usage = export; quota denials = export</span>
                ) : (
                  <span className="text-red-700" data-testid="reconcile-failed">
                    {bad.length} tenant(s) differ: {bad.slice(0, 3).map((r) => `${r.tenant} (rollups ${r.rollups}, quota ${r.quotaUsage ?? "—"}, export ${r.exported ?? "—"}, quota denials ${r.quotaDenials ?? "—"}, exported denied ${r.exportedDenied ?? "—"})`).join("; ")}
                  </span>
                ),
              },
            };
          })}
        />
      </Section>
    </>
  );
}
