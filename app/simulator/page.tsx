import { ReplayPanel } from "../justify/replay-panel";
import { Simulator } from "@/components/simulator/simulator";
import { Forbidden, PageHeader } from "@/components/ui";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { listTenantSlugs, listTierNames } from "@/lib/db/ui-tenants";
import { readLivePolicyDocument } from "@/lib/db/ui-policy";
import type { CompiledPolicyBody } from "@/lib/policy/compiled";
import { bodyOf } from "@/lib/policy/compile";
import { parseCompiledPolicy } from "@/lib/policy/compiled-schema";
import { ServiceError } from "@/lib/services/errors";
import { compileDraft } from "@/lib/services/policy/publish-policy";
import { can } from "@/lib/auth/permissions";
import { replayDraftAction } from "../justify/actions";

export const metadata = { title: "Simulator · Sluice" };

/** Only the chosen tenant travels to the browser: the document stays small at 10,000 tenants. */
function prune(doc: CompiledPolicyBody, tenant: string | null): CompiledPolicyBody {
  const tenants = tenant && Object.hasOwn(doc.tenants, tenant) ? { [tenant]: doc.tenants[tenant] } : {};
  return { ...bodyOf(doc), tenants };
}

export default async function SimulatorPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/simulator"], "/simulator");
  if (!allowed) return <Forbidden role={principal.role} what="read the policy" />;
  const params = await searchParams;
  const [tenants, tiers, liveRow] = await Promise.all([listTenantSlugs(db(), 1000), listTierNames(db()), readLivePolicyDocument(db())]);
  const requested = typeof params.tenant === "string" ? params.tenant : null;
  const tenant = requested ?? tenants[0]?.slug ?? null;
  let draft: CompiledPolicyBody | null = null;
  let draftError: string | null = null;
  try {
    draft = prune(await compileDraft(db()), tenant);
  } catch (error) {
    if (error instanceof ServiceError) draftError = error.message;
    else throw error;
  }
  const parsed = liveRow ? parseCompiledPolicy(liveRow.document) : null;
  const live = parsed?.ok ? { version: parsed.value.version, body: prune(parsed.value, tenant) } : null;
  const operations = [...new Set([...Object.keys(draft?.operations ?? {}), ...Object.keys(live?.body.operations ?? {})])].sort();
  if (requested && !tenants.some((t) => t.slug === requested)) tenants.unshift({ slug: requested, tier: draft?.tenants[requested]?.tier ?? "?" });
  return (
    <>
      <PageHeader
        title="Simulator"
        description="See what a change does before publishing it: the same traffic runs through the draft and the live policy, with the decision server's own algorithms, in your browser."
      />
      <Simulator
        draft={draft}
        draftError={draftError}
        live={live}
        tiers={[...new Set([...tiers, ...Object.keys(live?.body.tiers ?? {})])]}
        tenants={tenants}
        operations={operations}
        initialTenant={requested}
      />
      {draft && live && can(principal.role, "usage.read") && <div className="mt-6"><ReplayPanel replay={replayDraftAction} tenant={tenant} /></div>}
    </>
  );
}
