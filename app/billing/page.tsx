import Link from "next/link";
import type { Column } from "@/components/data-table";
import { SortableDataTable } from "@/components/sortable-data-table";
import { EmptyState, Forbidden, formatTime, PageHeader, Section } from "@/components/ui";
import { LineTable, TenantTable } from "./month-tables";
import { PeriodControls } from "./period-controls";
import { DriftNotice, PeriodStatus } from "./period-notices";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { can } from "@/lib/auth/permissions";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { env } from "@/lib/env";
import { billingMonths, checkBillingPeriod, listBilling, periodSchema } from "@/lib/services/billing/billing-export";
import { ServiceError } from "@/lib/services/errors";
import { BILLING_DICTIONARY } from "@/lib/services/billing/billing-format";
import { billingOverview } from "@/lib/services/billing/billing-overview";
import { reconcileBilling } from "@/lib/services/billing/billing-reconcile";

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
  { key: "checksums", label: "checksum (sha256, at close)", className: "font-mono text-xs", sortable: false },
  { key: "reconciliation", label: "reconciliation", sortable: false },
];

/** The time of this request (outside render, so the page stays pure). */
async function requestTime(): Promise<number> {
  return Date.now();
}

/** The month to show: the one asked for if it is a month billing has, else why not. Reads only. */
async function resolvePeriod(asked: string | undefined, nowMs: number): Promise<{ period: string } | { error: string }> {
  if (asked === undefined) return { period: new Date(nowMs).toISOString().slice(0, 7) };
  const parsed = periodSchema.safeParse(asked);
  if (!parsed.success) return { error: `Unknown period “${asked}”: ${parsed.error.issues[0]!.message}.` };
  try {
    await checkBillingPeriod(db(), parsed.data, { nowMs });
    return { period: parsed.data };
  } catch (error) {
    if (error instanceof ServiceError && error.code === "not_found") return { error: `No ${error.message}.` };
    throw error;
  }
}

export default async function BillingPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/billing"], "/billing");
  if (!allowed) return <Forbidden role={principal.role} what="read usage" />;
  const canExport = can(principal.role, "billing.export");
  const sp = await searchParams;
  const asked = typeof sp.period === "string" ? sp.period : undefined;
  const nowMs = await requestTime();
  const resolved = await resolvePeriod(asked, nowMs);
  const months = await billingMonths(db(), { nowMs });
  const periods = (await listBilling(db())).slice(0, 24);
  const reports = await Promise.all(periods.slice(0, 12).map((p) => reconcileBilling(db(), p.period)));
  const overview = "period" in resolved ? await billingOverview(db(), resolved.period, { graceMs: env().BILLING_GRACE_MS, nowMs }) : null;
  const allTenants = overview ? [...new Map(overview.tenants.map((t) => [t.tenant, { slug: t.tenant, name: t.tenantName }])).values()] : [];
  const askedTenant = typeof sp.tenant === "string" && sp.tenant !== "" ? sp.tenant : null;
  const tenant = askedTenant && allTenants.some((t) => t.slug === askedTenant) ? askedTenant : null;
  const mine = <T extends { tenant: string }>(rows: readonly T[]) => (tenant ? rows.filter((r) => r.tenant === tenant) : rows);
  const exportQuery = (period: string, format: string) => `/api/v1/billing/exports?period=${period}&format=${format}${tenant ? `&tenant=${tenant}` : ""}`;
  return (
    <>
      <PageHeader
        title="Billing"
        description="Quota usage per tenant and month, as the billing export reports it. Units: a request takes its cost from every quota that covers it (1 unless its operation or the request sets a cost)."
      />
      <PeriodControls
        period={"period" in resolved ? resolved.period : months.current}
        tenant={tenant}
        tenants={allTenants}
        first={months.first}
        current={months.current}
        asOfMs={nowMs}
      />
      {"error" in resolved && (
        <p role="alert" className="card mb-4 border-red-300 bg-red-50 text-sm text-red-800" data-testid="period-error">
          {resolved.error}
        </p>
      )}
      {askedTenant && !tenant && overview && (
        <p role="alert" className="card mb-4 border-amber-300 bg-amber-50 text-sm text-amber-900" data-testid="tenant-error">
          No tenant “{askedTenant}” has lines in {overview.period}: showing all tenants.
        </p>
      )}
      {overview && (
        <Section title={`${overview.period} · ${overview.status}${tenant ? ` · ${tenant}` : ""}`} description={<PeriodStatus overview={overview} />}>
          <DriftNotice overview={overview} />
          <div className="mb-3 flex flex-wrap items-center gap-x-4 gap-y-1 text-sm" data-testid="period-downloads">
            <span className="text-slate-600">
              Export {overview.period}
              {tenant ? ` (${tenant} only)` : ""}:
            </span>
            {canExport ? (
              FORMATS.map(([format, label]) => (
                <a key={format} className="text-indigo-700 hover:underline" href={exportQuery(overview.period, format)}>
                  {label}
                </a>
              ))
            ) : (
              <span className="text-slate-600" data-testid="export-not-allowed">
                downloads need the billing or admin role (the {principal.role} role reads usage here)
              </span>
            )}
            <a className="text-indigo-700 hover:underline" href="/api/v1/billing/dictionary?format=csv">
              Column dictionary (CSV)
            </a>
            <span className="text-xs text-slate-500">The time of each export is in its X-Sluice-Exported-At header; the bytes never change for the same figures.</span>
          </div>
          <h3 className="mb-1 text-sm font-semibold">Per tenant</h3>
          <TenantTable tenants={mine(overview.tenants)} />
          <h3 className="mt-4 mb-1 text-sm font-semibold">Lines (one per tenant × quota, as exported)</h3>
          <LineTable lines={mine(overview.lines)} />
          <p className="mt-2 text-xs text-slate-500">
            Daily quotas allow their units per UTC day: used is the sum over the month’s days, overage is counted day by day. “denied by this quota” counts quota denials only (429
            quota_exhausted); rate limits, concurrency limits, global caps, 401 and 403 are not in it.
          </p>
        </Section>
      )}
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
                period: (
                  <Link className="text-indigo-700 hover:underline" href={`/billing?period=${p.period}`}>
                    {p.period}
                  </Link>
                ),
                status: p.status === "closed" ? `final (closed ${formatTime(p.closedAt)})` : "provisional (open)",
                revision: p.revision,
                download: !canExport ? (
                  <span className="text-xs text-slate-500">billing role</span>
                ) : (
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
                reconciliation: (
                  <>
                    {!report ? (
                      <span className="text-slate-400">—</span>
                    ) : report.ok ? (
                  <span className="text-green-700" data-testid="reconcile-ok">rollups → quota usage = export; quota denials = export</span>
                ) : (
                  <span className="text-red-700" data-testid="reconcile-failed">
                    {bad.length} tenant(s) differ: {bad.slice(0, 3).map((r) => `${r.tenant} (rollups ${r.rollups}, quota ${r.quotaUsage ?? "—"}, export ${r.exported ?? "—"}, quota denials ${r.quotaDenials ?? "—"}, exported denied ${r.exportedDenied ?? "—"})`).join("; ")}
                  </span>
                    )}
                    {overview?.period === p.period && overview.drift.differences.length > 0 && (
                      <div className="text-red-700" data-testid="period-drift">
                        but enforcement’s counters differ from the export on {overview.drift.differences.length} line{overview.drift.differences.length === 1 ? "" : "s"} (see the month above)
                      </div>
                    )}
                  </>
                ),
              },
            };
          })}
        />
        <p className="mt-2 text-xs text-slate-500">
          Reconciliation: the passed requests in the rollups, the quota usage kept from them (in units, so never fewer than the requests) and the export must agree; the worker also
          checks the quota counters the decision servers enforce against quota usage, and warns only when they differ beyond the usage still in flight and the decisions that passed
          degraded.
        </p>
      </Section>
      <Section title="Column dictionary" description="What every column of the export means. The JSON export carries it as `dictionary`; the CSV links to it (Link header, rel=describedby).">
        <div className="relative overflow-x-auto rounded-lg border border-slate-200 bg-white">
          <table className="table" data-testid="billing-dictionary">
            <thead>
              <tr>
                <th scope="col">column (CSV / JSON)</th>
                <th scope="col">unit</th>
                <th scope="col">meaning</th>
              </tr>
            </thead>
            <tbody>
              {BILLING_DICTIONARY.map((d) => (
                <tr key={d.column}>
                  <td className="font-mono text-xs whitespace-nowrap">
                    {d.column}
                    {d.json !== d.column && <div className="text-slate-400">{d.json}</div>}
                  </td>
                  <td className="text-xs whitespace-nowrap">{d.unit}</td>
                  <td className="min-w-64 text-xs">{d.meaning}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Section>
    </>
  );
}
