import { Forbidden, PageHeader } from "@/components/ui";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { parseCustomRange, parseDashboardRange } from "@/lib/services/observe/usage-dashboard";
import { RolloutBanner } from "@/components/rollout-banner";
import { db } from "@/lib/db/client";
import { rolloutStatus } from "@/lib/services/rollout/control-rollout";
import { DashboardAccuracy } from "./accuracy";
import { AlertRulesSection } from "./alert-rules";
import { DeniedByLimit } from "./denied-by-limit";
import { RangeError, UsagePanels } from "./panels";

export const metadata = { title: "Dashboards · Sluice" };
export const dynamic = "force-dynamic";

/** The time of this request (outside render, so the page stays pure). */
async function requestTime(): Promise<number> {
  return Date.now();
}

export default async function DashboardsPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/dashboards"], "/dashboards");
  if (!allowed) return <Forbidden role={principal.role} what="see dashboards" />;
  const params = await searchParams;
  const range = parseDashboardRange(params.range);
  const nowMs = await requestTime();
  const asked = (k: string) => (typeof params[k] === "string" ? (params[k] as string) : null);
  const from = asked("from");
  const to = asked("to");
  const custom = from !== null || to !== null ? parseCustomRange(from ?? "", to ?? "", nowMs) : null;
  const window = custom?.ok ? { fromMs: custom.fromMs, toMs: custom.toMs } : undefined;
  const rollout = await rolloutStatus({ db: db() });
  return (
    <>
      <PageHeader
        title="Dashboards"
        description="Decisions from the decision servers' per-minute aggregates, drained exactly once by the worker. Purple markers are policy versions."
      />
      <RolloutBanner rollout={rollout} />
      {custom && !custom.ok ? (
        <RangeError message={custom.message} value={custom.value} basePath="/dashboards" />
      ) : range.ok ? (
        <>
          <UsagePanels range={range.range} basePath="/dashboards" custom={window} />
          <div className="mt-4">
            <DeniedByLimit range={range.range} nowMs={nowMs} custom={window} />
          </div>
          <div className="mt-4">
            <DashboardAccuracy range={range.range} custom={window} />
          </div>
        </>
      ) : (
        <RangeError message={range.message} value={range.value} basePath="/dashboards" />
      )}
      <div className="mt-6">
        <AlertRulesSection principal={principal} />
      </div>
    </>
  );
}
