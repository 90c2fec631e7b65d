import Link from "next/link";
import { notFound } from "next/navigation";
import { Forbidden, PageHeader } from "@/components/ui";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { parseDashboardRange } from "@/lib/services/observe/usage-dashboard";
import { RangeError, UsagePanels } from "../../panels";

export const metadata = { title: "Tenant dashboard · Sluice" };
export const dynamic = "force-dynamic";

/** The same charts as /dashboards for one tenant (the tenant page links here). */
export default async function TenantDashboardPage({
  params,
  searchParams,
}: {
  params: Promise<{ slug: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const { slug } = await params;
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/dashboards"], `/dashboards/tenants/${slug}`);
  if (!allowed) return <Forbidden role={principal.role} what="see dashboards" />;
  const tenant = await db().tenant.findUnique({ where: { slug }, select: { slug: true, name: true } });
  if (!tenant) notFound();
  const sp = await searchParams;
  const range = parseDashboardRange(sp.range);
  return (
    <>
      <PageHeader
        title={`${tenant.name} — usage`}
        description={
          <>
            Decisions of tenant <Link className="text-indigo-700 hover:underline" href={`/tenants/${tenant.slug}`}>{tenant.slug}</Link>. Latency,
            store errors and RPS by tier are for all tenants (the decision servers do not split them per tenant).
          </>
        }
      />
      {range.ok ? (
        <UsagePanels tenant={tenant.slug} range={range.range} basePath={`/dashboards/tenants/${tenant.slug}`} />
      ) : (
        <RangeError message={range.message} value={range.value} basePath={`/dashboards/tenants/${tenant.slug}`} />
      )}
    </>
  );
}
