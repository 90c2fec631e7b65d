import Link from "next/link";
import { AlertList } from "@/components/alert-list";
import { auditCells } from "@/components/audit-cells";
import type { Column } from "@/components/data-table";
import { SortableDataTable } from "@/components/sortable-data-table";
import { EmptyState, formatTime, PageHeader, Section, Stat } from "@/components/ui";
import { can } from "@/lib/auth/permissions";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { readOverview } from "@/lib/db/ui-overview";
import { listAlertsWithState } from "@/lib/services/observe/alert-actions";
import { readLivePolicy } from "@/lib/services/policy/draft-view";
import { RolloutBanner } from "@/components/rollout-banner";
import { rolloutStatus } from "@/lib/services/rollout/control-rollout";
import { acknowledgeAlertAction, silenceAlertAction } from "./_lib/alert-actions";

export const metadata = { title: "Overview · Sluice" };

const RECENT_COLUMNS: Column[] = [
  { key: "at", label: "When", className: "whitespace-nowrap", firstDir: "desc" },
  { key: "actor", label: "Who" },
  { key: "action", label: "What", className: "font-mono text-xs" },
  { key: "entity", label: "Entity" },
];

/** The time of this request (outside render, so the page stays pure). */
async function requestTime(): Promise<number> {
  return Date.now();
}

/** A live count, with the draft's beside it when the draft differs. */
function Count({ live, draft }: { live: number | null; draft: number }) {
  if (live === null || live === draft) return <>{draft.toLocaleString("en-US")}</>;
  return (
    <span data-testid="live-draft-count">
      {live.toLocaleString("en-US")} <span className="text-sm font-normal text-amber-800">draft {draft.toLocaleString("en-US")}</span>
    </span>
  );
}

export default async function OverviewPage() {
  const { principal } = await pageAccess(PAGE_ACTIONS["/"], "/");
  const nowMs = await requestTime();
  const [data, live, alerts, rollout] = await Promise.all([
    readOverview(db()),
    readLivePolicy(db()),
    listAlertsWithState(db(), { sinceMs: nowMs - 86_400_000, nowMs }),
    rolloutStatus({ db: db() }),
  ]);
  // Counts are the live policy's (what decision servers enforce); the draft's is shown beside when it differs.
  const liveTenants = live ? Object.values(live.tenants) : null;
  const liveCounts = {
    tenants: liveTenants?.length ?? null,
    suspended: liveTenants ? liveTenants.filter((t) => t.status === "suspended").length : null,
    tiers: live ? Object.keys(live.tiers).length : null,
    operations: live ? Object.keys(live.operations).length : null,
  };
  return (
    <>
      <PageHeader title="Overview" description="What the live policy enforces (counts are live; the draft's number is shown beside where it differs), alerts, and the latest changes." />
      <RolloutBanner rollout={rollout} />
      <div className="mb-6 grid grid-cols-2 gap-3 md:grid-cols-3 lg:grid-cols-6" data-testid="overview-counts">
        <Stat label="Live version" value={data.live ? `v${data.live.version}` : "none"} href="/policy" />
        <Stat label="Tenants" value={<Count live={liveCounts.tenants} draft={data.counts.tenants} />} href="/tenants" />
        <Stat label="Suspended" value={<Count live={liveCounts.suspended} draft={data.counts.suspended} />} href="/tenants?status=suspended" />
        <Stat label="Tiers" value={<Count live={liveCounts.tiers} draft={data.counts.tiers} />} href="/tiers" />
        <Stat label="Operations" value={<Count live={liveCounts.operations} draft={data.counts.operations} />} href="/operations" />
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
        <Section title="Alerts" description="429 share, quota and Redis alerts of the last 24 hours. Each links to the change of the policy version published before it began.">
          <AlertList
            alerts={alerts}
            canAct={can(principal.role, "dashboards.read")}
            acknowledge={acknowledgeAlertAction}
            silence={silenceAlertAction}
          />
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
