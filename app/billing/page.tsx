import Link from "next/link";
import type { Column } from "@/components/data-table";
import { SortableDataTable } from "@/components/sortable-data-table";
import { EmptyState, Forbidden, formatTime, PageHeader, Section } from "@/components/ui";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { can } from "@/lib/auth/permissions";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { env } from "@/lib/env";
import { checkBillingPeriod, listBilling, periodSchema } from "@/lib/services/billing-export";
import { ServiceError } from "@/lib/services/errors";
import { BILLING_DICTIONARY } from "@/lib/services/billing-format";
import { billingOverview } from "@/lib/services/billing-overview";
import { reconcileBilling } from "@/lib/services/billing-reconcile";

export const metadata = { title: "Billing · Sluice" };
export const dynamic = "force-dynamic";

const FORMATS = [
  ["csv", "CSV"],
  ["json", "JSON"],
  ["cloudevents", "CloudEvents"],
] as const;

const n = (x: number) => x.toLocaleString("en-US");

const PERIOD_COLUMNS: Column[] = [
  { key: "period", label: "period", className: "font-medium", firstDir: "desc" },
  { key: "status", label: "status" },
  { key: "revision", label: "adjustments", align: "right", className: "tabular-nums" },
  { key: "download", label: "download", sortable: false },
  { key: "checksums", label: "checksum (sha256, at close)", className: "font-mono text-xs", sortable: false },
  { key: "reconciliation", label: "reconciliation", sortable: false },
];

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
  const resolved = await resolvePeriod(asked, await requestTime());
  const periods = (await listBilling(db())).slice(0, 24);
  const reports = await Promise.all(periods.slice(0, 12).map((p) => reconcileBilling(db(), p.period)));
  const overview = "period" in resolved ? await billingOverview(db(), resolved.period, { graceMs: env().BILLING_GRACE_MS }) : null;
  return (
    <>
      <PageHeader
        title="Billing"
        description="Quota usage per tenant and month, as the billing export reports it. Units: a request takes its cost from every quota that covers it (1 unless its operation or the request sets a cost)."
      />
      {"error" in resolved && (
        <p role="alert" className="card mb-4 border-red-300 bg-red-50 text-sm text-red-800" data-testid="period-error">
          {resolved.error}
        </p>
      )}
      {overview && (
        <Section title={`${overview.period} · ${overview.status}`} description={<PeriodStatus status={overview.status} closesAt={overview.closesAt} />}>
          <div className="mb-3 flex flex-wrap items-center gap-x-4 gap-y-1 text-sm" data-testid="period-downloads">
            <span className="text-slate-600">Export {overview.period}:</span>
            {canExport ? (
              FORMATS.map(([format, label]) => (
                <a key={format} className="text-indigo-700 hover:underline" href={`/api/v1/billing/exports?period=${overview.period}&format=${format}`}>
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
          <SortableDataTable
            testId="billing-tenants"
            columns={TENANT_COLUMNS}
            empty={<EmptyState title="No tenant had a quota in force this month." />}
            rows={overview.tenants.map((t) => ({
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
                reconciliation: !t.reconciliation ? (
                  <span className="text-slate-400">—</span>
                ) : t.reconciliation.ok ? (
                  <span className="text-green-700" title={`rollups ${t.reconciliation.rollups} passed requests; quota usage ${t.reconciliation.quotaUsage ?? "—"} units; export ${t.reconciliation.exported ?? "—"} units`}>
                    ✓ {n(t.reconciliation.rollups)} requests → {n(t.reconciliation.quotaUsage ?? 0)} units = export
                  </span>
                ) : (
                  <span className="text-red-700" data-testid="tenant-reconcile-failed">
                    differs: rollups {n(t.reconciliation.rollups)} requests, quota {t.reconciliation.quotaUsage ?? "—"} units, export {t.reconciliation.exported ?? "—"} units
                  </span>
                ),
              },
            }))}
          />
          <h3 className="mt-4 mb-1 text-sm font-semibold">Lines (one per tenant × quota, as exported)</h3>
          <SortableDataTable
            testId="billing-lines"
            columns={LINE_COLUMNS}
            rows={overview.lines.map((l) => ({
              key: `${l.lineType}/${l.tenant}/${l.quotaId}/${"revision" in l ? String(l.revision) : ""}`,
              values: { tenant: l.tenant, quota: l.quotaName, used: l.used, overage: l.overageUnits, denied: l.denied },
              cells: {
                tenant: l.tenant,
                quota: (
                  <>
                    {l.quotaName}
                    {l.override && <span className="badge ml-1 bg-amber-100 text-amber-800">tenant override</span>}
                    {l.lineType === "adjustment" && <span className="badge ml-1">late adjustment</span>}
                    <div className="font-mono text-[11px] text-slate-400">quota_id {l.quotaId}</div>
                  </>
                ),
                used: `${n(l.used)} / ${n(l.limit)}${l.quotaPeriod === "day" ? " a day" : ""}`,
                overage: l.overage === "bill" ? n(l.overageUnits) : <span className="text-slate-400">blocked, none</span>,
                denied: n(l.denied),
              },
            }))}
          />
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
                reconciliation: !report ? (
                  <span className="text-slate-400">—</span>
                ) : report.ok ? (
                  <span className="text-green-700" data-testid="reconcile-ok">rollups → quota usage = export; quota denials = export</span>
                ) : (
                  <span className="text-red-700" data-testid="reconcile-failed">
                    {bad.length} tenant(s) differ: {bad.slice(0, 3).map((r) => `${r.tenant} (rollups ${r.rollups}, quota ${r.quotaUsage ?? "—"}, export ${r.exported ?? "—"}, quota denials ${r.quotaDenials ?? "—"}, exported denied ${r.exportedDenied ?? "—"})`).join("; ")}
                  </span>
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

function PeriodStatus({ status, closesAt }: { status: "provisional" | "final"; closesAt: string }) {
  if (status === "final") return <>Final: closed by the worker; it exports the same bytes every time, and usage drained later appears as adjustment lines.</>;
  return (
    <span data-testid="period-status">
      Provisional: the month is open, and its figures still grow as the worker drains usage (about every minute). The worker closes it at{" "}
      <strong>{formatTime(closesAt)}</strong> (the month’s end plus the grace window, BILLING_GRACE_MS); from then on it is final.
    </span>
  );
}
