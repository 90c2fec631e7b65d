/**
 * The dashboard panels, server-rendered around recharts client leaves. Used by /dashboards (all
 * tenants) and embeddable in the tenant page as `<UsagePanels tenant={slug} range={range} />`.
 */
import Link from "next/link";
import { AutoRefresh } from "@/components/charts/auto-refresh";
import { CsvButton } from "@/components/charts/csv-button";
import { QuotaBurnChart } from "@/components/charts/quota-burn-chart";
import { TimeChart } from "@/components/charts/time-chart";
import type { Column } from "@/components/data-table";
import { SortableDataTable } from "@/components/sortable-data-table";
import { db } from "@/lib/db/client";
import { DENIAL_REASON_LABELS, DENIAL_REASONS, UNRECORDED_REASON, UNRECORDED_REASON_LABEL, type DenialsByReason } from "@/lib/policy/denial-reasons";
import { DASHBOARD_RANGES, loadDashboard, type DashboardRange } from "@/lib/services/observe/usage-dashboard";

const TIER_COLORS = ["#4f46e5", "#0891b2", "#16a34a", "#ea580c", "#db2777", "#64748b"];

const TOP_TENANT_COLUMNS: Column[] = [
  { key: "tenant", label: "tenant" },
  { key: "tier", label: "tier" },
  { key: "requests", label: "requests", align: "right", className: "tabular-nums", firstDir: "desc" },
  { key: "denied", label: "denied (401/403/429/503)", align: "right", className: "tabular-nums", firstDir: "desc" },
];
const TOP_KEY_COLUMNS: Column[] = [
  { key: "keyPrefix", label: "API key", className: "font-mono text-xs" },
  ...TOP_TENANT_COLUMNS.filter((c) => c.key !== "tier"),
];
const QUOTA_COLUMNS: Column[] = [
  { key: "tenant", label: "tenant" },
  { key: "operation", label: "operation" },
  { key: "used", label: "used / limit", align: "right", className: "tabular-nums", firstDir: "desc" },
  { key: "projected", label: "projected", align: "right", className: "tabular-nums", firstDir: "desc" },
  { key: "runsOutAt", label: "runs out" },
];

/**
 * Decisions that resolved no tenant (a missing or unknown API key: the 401s) are recorded under the
 * tier and tenant `_`; on screen they are named for what they are.
 */
export const NO_TENANT_LABEL = "no tenant (unknown or missing key)";
function tierLabel(tier: string): string {
  return tier === "_" ? NO_TENANT_LABEL : tier;
}

/** The range's denials in words, by the decision API's reason (only those that happened). */
function DenialSummary({ byReason }: { byReason: DenialsByReason }) {
  const parts = [...DENIAL_REASONS.map((r) => [DENIAL_REASON_LABELS[r], byReason[r]] as const), [UNRECORDED_REASON_LABEL, byReason[UNRECORDED_REASON]] as const].filter(([, n]) => n > 0);
  if (parts.length === 0) return null;
  return (
    <span data-testid="denials-by-reason" className="text-xs text-slate-600">
      denied: {parts.map(([label, n]) => `${n.toLocaleString("en-US")} ${label}`).join(" · ")}
    </span>
  );
}

function tenantLink(tenant: string) {
  if (tenant === "_") return <span className="text-slate-500">{NO_TENANT_LABEL}</span>;
  return (
    <Link className="text-indigo-700 hover:underline" href={`/tenants/${encodeURIComponent(tenant)}`}>
      {tenant}
    </Link>
  );
}

const localUtc = (ms: number) => new Date(ms).toISOString().slice(0, 16);

/** A custom range (UTC): a plain GET form, so the URL is the state and it works without script. */
function CustomRange({ basePath, fromMs, toMs }: { basePath: string; fromMs: number; toMs: number }) {
  return (
    <form method="get" action={basePath} className="flex flex-wrap items-center gap-1 text-xs" data-testid="custom-range">
      <label className="flex items-center gap-1">
        from
        <input type="datetime-local" name="from" defaultValue={localUtc(fromMs)} className="input py-0.5 text-xs" required />
      </label>
      <label className="flex items-center gap-1">
        to
        <input type="datetime-local" name="to" defaultValue={localUtc(toMs)} className="input py-0.5 text-xs" required />
      </label>
      <span className="text-slate-500">UTC</span>
      <button type="submit" className="btn py-0.5 text-xs">
        Apply
      </button>
    </form>
  );
}

function RangePicker({ range, basePath }: { range: DashboardRange | "custom" | null; basePath: string }) {
  return (
    <nav aria-label="Time range" className="flex flex-wrap gap-1" data-testid="range-picker">
      {(Object.keys(DASHBOARD_RANGES) as DashboardRange[]).map((r) => (
        <Link
          key={r}
          href={`${basePath}?range=${r}`}
          aria-current={r === range ? "page" : undefined}
          className={`rounded px-2 py-1 text-xs ${r === range ? "bg-indigo-600 text-white" : "bg-slate-100 text-slate-700 hover:bg-slate-200"}`}
        >
          {r}
        </Link>
      ))}
    </nav>
  );
}

/** An unknown `?range=`: said to the user, with the ranges there are (never silently another range). */
export function RangeError({ message, value, basePath }: { message: string; value: string; basePath: string }) {
  return (
    <div className="flex flex-col gap-3">
      <div role="alert" className="card border-red-300 bg-red-50 text-sm text-red-800" data-testid="range-error">
        Unknown time range “{value}”: {message}.
      </div>
      <RangePicker range={null} basePath={basePath} />
    </div>
  );
}

function policyLink(version: number | null) {
  if (version === null) return <span className="text-slate-400">no policy yet</span>;
  return (
    <Link className="text-indigo-700 hover:underline" href={`/policy?version=${version}#versions`}>
      after policy v{version} (diff)
    </Link>
  );
}

export async function UsagePanels({ tenant, range, basePath, custom }: { tenant?: string; range: DashboardRange; basePath: string; custom?: { fromMs: number; toMs: number } }) {
  const d = await loadDashboard(db(), { range, tenant, custom });
  const scope = tenant ? `tenant ${tenant}` : "all tenants";
  const latencyData = d.latency.map((l) => ({ ...l }));
  return (
    <div className="flex flex-col gap-4" data-testid="usage-panels">
      <div className="flex flex-wrap items-center justify-between gap-2">
        <div className="flex flex-col gap-2">
          <RangePicker range={d.range} basePath={basePath} />
          <CustomRange basePath={basePath} fromMs={d.fromMs} toMs={d.toMs} />
        </div>
        <div className="flex items-center gap-4 text-sm text-slate-700">
          <span data-testid="total-decisions">{d.totals.decisions.toLocaleString("en-US")} decisions</span>
          <span data-testid="total-deny-share" title="429s (rate_limited, quota_exhausted, concurrency_limited, cost_exceeds_limit) over all decisions">
            429 share {d.totals.share429Pct}%
          </span>
          <DenialSummary byReason={d.totals.byReason} />
          {d.range !== "custom" && <AutoRefresh seconds={30} />}
        </div>
      </div>
      <p className="text-xs text-slate-500" data-testid="range-note">
        {d.range === "custom"
          ? `From ${localUtc(d.fromMs).replace("T", " ")} to ${localUtc(d.toMs).replace("T", " ")} UTC, by the ${d.granularity}; the running minute is left out until its counts arrive.`
          : `Up to ${new Date(d.toMs).toISOString().slice(11, 16)} UTC, the last finished minute; the running minute is left out until its counts arrive.`}
        {d.partial && ` The last point is the current hour so far (${d.partial.minutes} of 60 minutes): its counts are partial, its requests per second are over those minutes.`}
      </p>

      {d.alerts.length > 0 && (
        <div className="card border-amber-300 bg-amber-50" data-testid="alerts">
          <h3 className="mb-2 text-sm font-semibold text-amber-900">Alerts</h3>
          <ul className="flex flex-col gap-1 text-sm">
            {d.alerts.map((a) => (
              <li key={a.id} data-testid="alert" className={a.resolvedAt ? "text-slate-500" : "text-amber-900"}>
                <strong>{a.resolvedAt ? "resolved" : "firing"}</strong> · {a.message} · since {new Date(a.startedAt).toISOString().slice(0, 16).replace("T", " ")} UTC · {policyLink(a.policyVersion)}
                {a.webhookStatus ? ` · webhook ${a.webhookStatus}` : ""}
              </li>
            ))}
          </ul>
        </div>
      )}

      <div className="grid grid-cols-1 gap-4 xl:grid-cols-2">
        <TimeChart
          title={`Decisions by outcome (${scope}) and 429 share`}
          data={d.decisions}
          markers={d.markers}
          csvName="decisions"
          series={[
            { key: "allowed", label: "allowed", color: "#16a34a" },
            { key: "denied429", label: "429 (limits and quotas)", color: "#dc2626" },
            { key: "denied401", label: "401 unknown or missing key", color: "#9333ea" },
            { key: "denied403", label: "403 tenant suspended", color: "#0f766e" },
            { key: "denied503", label: "503 store unavailable", color: "#1e293b" },
            ...(d.totals.byReason[UNRECORDED_REASON] > 0 ? [{ key: UNRECORDED_REASON, label: UNRECORDED_REASON_LABEL, color: "#a8a29e" }] : []),
            { key: "shadowDenied", label: "shadow-denied", color: "#f59e0b" },
            { key: "degraded", label: "degraded", color: "#64748b" },
            { key: "share429Pct", label: "429 share %", color: "#7f1d1d", right: true },
          ]}
          csvColumns={["allowed", "denied", ...DENIAL_REASONS, UNRECORDED_REASON, "shadowDenied", "degraded", "share429Pct"]}
          rightUnit="%"
        />
        <TimeChart
          title="Requests per second by tier (all tenants)"
          data={d.rpsByTier.points}
          markers={d.markers}
          csvName="rps-by-tier"
          series={d.rpsByTier.tiers.map((t, i) => ({ key: t, label: tierLabel(t), color: TIER_COLORS[i % TIER_COLORS.length]! }))}
        />
        <TimeChart
          title="Decision latency p50 / p95 / p99, allow path and reject path (all tenants)"
          data={latencyData}
          markers={d.markers}
          csvName="latency"
          unit="ms"
          series={[
            { key: "allowP50", label: "allow p50", color: "#86efac" },
            { key: "allowP95", label: "allow p95", color: "#22c55e" },
            { key: "allowP99", label: "allow p99", color: "#15803d" },
            { key: "rejectP50", label: "reject p50", color: "#fca5a5" },
            { key: "rejectP95", label: "reject p95", color: "#ef4444" },
            { key: "rejectP99", label: "reject p99", color: "#991b1b" },
          ]}
        />
        <TimeChart
          title="Redis errors, timeouts, breaker openings and degraded decisions (all tenants)"
          data={d.errors}
          markers={d.markers}
          csvName="store-errors"
          series={[
            { key: "redisError", label: "redis errors", color: "#dc2626" },
            { key: "redisTimeout", label: "timeouts", color: "#ea580c" },
            { key: "breakerOpen", label: "breaker openings", color: "#7c3aed" },
            { key: "degraded", label: "degraded decisions", color: "#64748b" },
          ]}
        />
      </div>

      <div className="grid grid-cols-1 gap-4 xl:grid-cols-2">
        {(
          [
            ["Top consumers by requests", d.topByRequests, "top-requests"],
            ["Top consumers by denials", d.topByDenied, "top-denied"],
          ] as const
        ).map(([title, top, name]) => (
          <div className="card" key={name} data-testid={name}>
            <div className="mb-2 flex items-center justify-between">
              <h3 className="text-sm font-semibold text-slate-800">{title}</h3>
              <CsvButton rows={[...top.tenants.map((t) => ({ kind: "tenant", ...t, keyPrefix: "" })), ...top.keys.map((k) => ({ kind: "key", ...k, keyPrefix: k.label }))]} columns={["kind", "tenant", "keyPrefix", "tier", "requests", "denied"]} filename={name} />
            </div>
            <SortableDataTable
              framed={false}
              columns={TOP_TENANT_COLUMNS}
              rows={top.tenants.map((t) => ({
                key: t.tenant,
                values: { tenant: t.tenant, requests: t.requests, denied: t.denied },
                cells: { tenant: tenantLink(t.tenant), tier: tierLabel(t.tier), requests: t.requests.toLocaleString("en-US"), denied: t.denied.toLocaleString("en-US") },
              }))}
            />
            <h4 className="mb-1 mt-3 text-xs font-semibold uppercase text-slate-500">API keys</h4>
            <SortableDataTable
              framed={false}
              columns={TOP_KEY_COLUMNS}
              rows={top.keys.map((k) => ({
                key: `${k.tenant}/${k.keyPrefix}`,
                values: { keyPrefix: k.label, tenant: k.tenant, requests: k.requests, denied: k.denied },
                cells: { keyPrefix: k.name ? <span title={`key ${k.name}`}>{k.label} <span className="font-sans text-slate-500">{k.name}</span></span> : k.label, tenant: tenantLink(k.tenant), requests: k.requests.toLocaleString("en-US"), denied: k.denied.toLocaleString("en-US") },
              }))}
            />
          </div>
        ))}
      </div>

      <div className="grid grid-cols-1 gap-4 xl:grid-cols-2">
        <QuotaBurnChart rows={d.quotas} />
        <div className="card" data-testid="quota-table">
          <h3 className="mb-2 text-sm font-semibold text-slate-800">Quota burn, most urgent first ({new Date(d.toMs).toISOString().slice(0, 7)})</h3>
          <SortableDataTable
            framed={false}
            columns={QUOTA_COLUMNS}
            rows={d.quotas.slice(0, 20).map((q) => ({
              key: `${q.tenant}/${q.quotaId}`,
              // used / limit sorts by the share of the quota used, the number that says "urgent".
              values: { tenant: q.tenant, used: q.limit > 0 ? q.used / q.limit : null, projected: q.projected, runsOutAt: q.runsOutAt },
              cells: {
                tenant: tenantLink(q.tenant),
                operation: q.retired ? (
                  <>
                    {q.operation} <span className="badge">retired</span>
                  </>
                ) : (
                  q.operation
                ),
                used: `${q.used.toLocaleString("en-US")} / ${q.limit.toLocaleString("en-US")}`,
                projected: q.retired ? <span className="text-slate-400">not projected (retired)</span> : q.projected.toLocaleString("en-US"),
                runsOutAt: q.runsOutAt ? <span className="text-red-700">{q.runsOutAt.slice(0, 10)}</span> : <span className="text-slate-400">—</span>,
              },
            }))}
          />
        </div>
      </div>
    </div>
  );
}
