import Link from "next/link";
import { GlobalCapsEditor } from "@/components/global-caps-editor";
import { TierEditor, type TierDraft } from "@/components/tier-editor";
import { EmptyState, Forbidden, PageHeader, Section } from "@/components/ui";
import { can } from "@/lib/auth/permissions";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { readTierMatrix } from "@/lib/db/ui-tiers";
import { formatDurationMs } from "@/lib/policy/duration";
import { deleteTierAction, saveGlobalCapsAction, saveTierAction } from "./actions";
import { DeleteTierButton } from "@/components/delete-tier-button";

export const metadata = { title: "Tiers · Sluice" };

const dur = (ms: number | null) => (ms === null ? undefined : formatDurationMs(ms));

export default async function TiersPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/tiers"], "/tiers");
  if (!allowed) return <Forbidden role={principal.role} what="read tiers" />;
  const params = await searchParams;
  const canEdit = can(principal.role, "policy.edit");
  const data = await readTierMatrix(db());
  const operations = data.operations.map((o) => o.name);
  const isNew = params.new === "1" && canEdit;
  const selectedName = typeof params.tier === "string" ? params.tier : data.tiers[0]?.name;
  const selected = data.tiers.find((t) => t.name === selectedName);

  const draft: TierDraft | null = isNew
    ? { name: "", weight: 1, limits: [], quotas: [] }
    : selected
      ? {
          name: selected.name,
          weight: selected.weight,
          limits: selected.limits.map((l) => ({
            operation: l.operation,
            scope: l.scope,
            algorithm: l.algorithm,
            limit: l.limit,
            window: dur(l.windowMs),
            burst: l.burst ?? undefined,
            precision: l.precision ?? undefined,
            mode: l.mode,
            maxDelay: dur(l.maxDelayMs),
            leaseTtl: dur(l.leaseTtlMs),
          })),
          quotas: selected.quotas.map((q) => ({ operation: q.operation, period: q.period, limit: q.limit, overage: q.overage })),
        }
      : null;

  return (
    <>
      <PageHeader
        title="Tiers and limits"
        description="Each tier has a limit matrix (operations × scopes), quotas per period, and a weight for fair sharing. Edits change the draft; decision servers see them once you publish on the Policy page."
        actions={canEdit ? <Link className="btn-primary" href="/tiers?new=1">New tier</Link> : undefined}
      />
      {!canEdit && <p className="mb-4 rounded bg-slate-100 px-3 py-2 text-sm text-slate-700">Read-only: the {principal.role} role may not edit the policy.</p>}
      <div className="mb-4 flex flex-wrap gap-1 border-b border-slate-200" role="tablist" aria-label="Tiers">
        {data.tiers.map((t) => (
          <Link
            key={t.name}
            role="tab"
            aria-selected={!isNew && t.name === selected?.name}
            href={`/tiers?tier=${encodeURIComponent(t.name)}`}
            className={`-mb-px rounded-t-md border px-3 py-1.5 text-sm ${!isNew && t.name === selected?.name ? "border-slate-200 border-b-white bg-white font-medium" : "border-transparent text-slate-600 hover:text-slate-900"}`}
          >
            {t.name} <span className="text-xs text-slate-500">({t.tenants})</span>
          </Link>
        ))}
        {isNew && <span className="-mb-px rounded-t-md border border-slate-200 border-b-white bg-white px-3 py-1.5 text-sm font-medium">New tier</span>}
      </div>
      {draft ? (
        <>
          <TierEditor key={isNew ? "new" : draft.name} initial={draft} operations={operations} isNew={isNew} canEdit={canEdit} save={saveTierAction} />
          {!isNew && canEdit && selected && (
            <div className="mt-4">
              <DeleteTierButton name={selected.name} tenants={selected.tenants} onDelete={deleteTierAction} />
            </div>
          )}
        </>
      ) : (
        <EmptyState title="No tiers yet" action={canEdit ? <Link className="btn-primary" href="/tiers?new=1">Create the first tier</Link> : undefined}>
          A tier groups tenants that share limits, such as free, pro and enterprise.
        </EmptyState>
      )}
      <div className="mt-8">
        <Section title="Global caps" description="One limit across all tenants for an expensive operation.">
          <GlobalCapsEditor
            initial={data.globalCaps.map((g) => ({ operation: g.operation, limit: g.limit, window: formatDurationMs(g.windowMs), share: g.share }))}
            operations={operations}
            canEdit={canEdit}
            save={saveGlobalCapsAction}
          />
        </Section>
      </div>
    </>
  );
}
