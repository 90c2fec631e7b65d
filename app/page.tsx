import Link from "next/link";
import { EmptyState, formatTime, PageHeader, Section, Stat } from "@/components/ui";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { readOverview } from "@/lib/db/ui-overview";

export const metadata = { title: "Overview · Sluice" };

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
        {data.recent.length === 0 ? (
          <EmptyState title="No changes yet">Edits to tiers, tenants, keys and publishes are recorded here.</EmptyState>
        ) : (
          <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
            <table className="table">
              <thead>
                <tr>
                  <th>When</th>
                  <th>Who</th>
                  <th>What</th>
                  <th>Entity</th>
                </tr>
              </thead>
              <tbody>
                {data.recent.map((r) => (
                  <tr key={r.id}>
                    <td className="whitespace-nowrap">{formatTime(r.at)}</td>
                    <td>{r.actor}</td>
                    <td className="font-mono text-xs">{r.action}</td>
                    <td>
                      {r.entity}
                      {r.entityId ? <span className="text-slate-500"> {r.entityId}</span> : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Section>
    </>
  );
}
