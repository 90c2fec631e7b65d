import { Forbidden, PageHeader } from "@/components/ui";
import { pageAccess } from "@/lib/auth/session";
import { dashboardRangeSchema } from "@/lib/services/usage-dashboard";
import { DashboardAccuracy } from "./accuracy";
import { UsagePanels } from "./panels";

export const metadata = { title: "Dashboards · Sluice" };
export const dynamic = "force-dynamic";

export default async function DashboardsPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { principal, allowed } = await pageAccess("dashboards.read", "/dashboards");
  if (!allowed) return <Forbidden role={principal.role} what="see dashboards" />;
  const params = await searchParams;
  const range = dashboardRangeSchema.parse(typeof params.range === "string" ? params.range : undefined);
  return (
    <>
      <PageHeader
        title="Dashboards"
        description="Decisions from the decision servers' per-minute aggregates, drained exactly once by the worker. Purple markers are policy versions."
      />
      <UsagePanels range={range} basePath="/dashboards" />
      <div className="mt-4"><DashboardAccuracy range={range} /></div>
    </>
  );
}
