import { AdvisorPanel, type AdvisorFormValues } from "./advisor-panel";
import { CapacityPanel } from "./capacity-panel";
import { EmptyState, Forbidden, PageHeader, Section } from "@/components/ui";
import { can } from "@/lib/auth/permissions";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { adviseFromForm, readJustifyContext } from "@/lib/services/justify/justify-context";
import { firstParams } from "@/lib/services/justify/justify-input";

export const metadata = { title: "Limit advisor · Sluice" };
export const dynamic = "force-dynamic";

export default async function AdvisorPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/advisor"], "/advisor");
  if (!allowed || !can(principal.role, "policy.read")) return <Forbidden role={principal.role} what="read usage and the policy" />;
  const context = await readJustifyContext(db());
  const header = (
    <PageHeader
      title="Limit advisor"
      description="Why this number? How fast each tier's subjects really go over the last 30 days, what a proposed limit would have denied, and the global cap a downstream's capacity allows."
    />
  );
  if (!context) {
    return (
      <>
        {header}
        <EmptyState title="Nothing published yet">The advisor reads the live version&apos;s tiers; publish a policy first.</EmptyState>
      </>
    );
  }
  const raw = firstParams(await searchParams, ["tier", "operation", "scope", "limit", "per"]);
  const { errors, result } = await adviseFromForm(db(), context, raw);
  const values: AdvisorFormValues = {
    tier: raw.tier ?? context.tiers[0]?.name ?? "",
    operation: raw.operation ?? "*",
    scope: raw.scope ?? "api_key",
    limit: raw.limit ?? "",
    per: raw.per ?? "minute",
  };
  return (
    <>
      {header}
      <Section title="Peak rates and a proposed limit" description="Per tier × operation × scope, from the usage rollups (denied requests count as demand).">
        <AdvisorPanel values={values} tiers={context.tiers.map((t) => t.name)} operations={context.operations} errors={errors} result={result} />
      </Section>
      <Section title="Capacity for a global cap" description={`Enter what the downstream can take; tiers, weights and active tenants are live v${context.version}'s.`}>
        <CapacityPanel tiers={context.tiers} globalCaps={context.globalCaps} />
      </Section>
    </>
  );
}
