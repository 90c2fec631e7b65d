import Link from "next/link";
import { auditCells } from "@/components/audit-cells";
import type { Column } from "@/components/data-table";
import { SortableDataTable } from "@/components/sortable-data-table";
import { EmptyState, formatTime, PageHeader, Section, Stat } from "@/components/ui";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { readOverview } from "@/lib/db/ui-overview";

export const metadata = { title: "Overview · Sluice" };

const RECENT_COLUMNS: Column[] = [
  { key: "at", label: "When", className: "whitespace-nowrap", firstDir: "desc" },
  { key: "actor", label: "Who" },
  { key: "action", label: "What", className: "font-mono text-xs" },
  { key: "entity", label: "Entity" },
];

export default async function OverviewPage() {
  await pageAccess("policy.read", "/");
  const data = await readOverview(db());
  return (
    <>
      <PageHeader title="Overview" description="The live policy, what is in the draft, and the latest changes." />
      <div className="mb-6 grid grid-cols-2 gap-3 md:grid-cols-3 lg:grid-cols-6">
        <Stat label="Live version" value={data.live ? `v${data.live.version}` : "none"} href="/policy" />
        <Stat label="Tenants" value={data.counts.tenants.toLocaleString("en-US")} href="/tenants" />
        <Stat label="Suspended" value={data.counts.suspended} href="/tenants?status=suspended" />
        <Stat label="Tiers" value={data.counts.tiers} href="/tiers" />
        <Stat label="Operations" value={data.counts.operations} href="/operations" />
        <Stat label="Active API keys" value={data.counts.activeKeys.toLocaleString("en-US")} />
      </div>
      <div className="grid grid-cols-1 gap-6 lg:grid-cols-2">
        <Section title="Live policy">
          {data.live ? (
            <div className="card text-sm" data-testid="live-version">
              <p>
                Version <strong>v{data.live.version}</strong> published by {data.live.author} at {formatTime(data.live.createdAt)}.
              </p>
              {data.live.note && <p className="mt-1 text-slate-600">“{data.live.note}”</p>}
              <p className="mt-1 font-mono text-xs text-slate-500">checksum {data.live.checksum.slice(0, 16)}…</p>
              <Link href="/policy" className="mt-3 inline-block text-indigo-700 hover:underline">
                Compare the draft with it →
              </Link>
            </div>
          ) : (
            <EmptyState title="Nothing published yet" action={<Link className="btn-primary" href="/policy">Review and publish the draft</Link>}>
              Decision servers are not ready until a policy is published. Shape tiers first, then publish from the Policy page.
            </EmptyState>
          )}
        </Section>
        <Section title="Alerts" description="429-share alerts from the observability jobs appear here.">
          <div className="card text-sm text-slate-600" data-testid="alerts-slot">
            No alert is firing. See <Link className="text-indigo-700 hover:underline" href="/dashboards">Dashboards</Link> for decision rates.
          </div>
        </Section>
      </div>
      <Section title="Recent changes" actions={<Link className="text-sm text-indigo-700 hover:underline" href="/audit">Full audit log →</Link>}>
        <SortableDataTable
          columns={RECENT_COLUMNS}
          initialSort={{ key: "at", dir: "desc" }}
          empty={<EmptyState title="No changes yet">Edits to tiers, tenants, keys and publishes are recorded here.</EmptyState>}
          rows={data.recent.map((r) => ({
            key: r.id,
            values: { at: r.at.getTime(), entity: `${r.entity} ${r.entityId ?? ""}` },
            cells: auditCells(r),
          }))}
        />
      </Section>
    </>
  );
}
