import Link from "next/link";
import { DataTable, type Column } from "@/components/data-table";
import { LiveDraft } from "@/components/live-draft";
import { queryHref } from "@/components/table-sort";
import { EmptyState, Forbidden, formatTime, PageHeader, Section } from "@/components/ui";
import { OverridesList } from "@/components/overrides-list";
import { CreateTenantForm } from "@/components/create-tenant-form";
import { can } from "@/lib/auth/permissions";
import { createTenantAction } from "./actions";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { listTenants, listTierNames, tenantListQuerySchema, type TenantListQuery } from "@/lib/db/ui-tenants";
import { listAllOverrides } from "@/lib/db/ui-overrides";
import { readLivePolicy } from "@/lib/services/policy/draft-view";

export const metadata = { title: "Tenants · Sluice" };

type Search = Record<string, string | string[] | undefined>;
const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) || undefined;

const COLUMNS: Column[] = [
  { key: "slug", label: "Slug" },
  { key: "name", label: "Name" },
  { key: "tier", label: "Tier" },
  { key: "status", label: "Status" },
  { key: "activeKeys", label: "Active keys", align: "right", className: "tabular-nums", sortable: false },
  { key: "createdAt", label: "Created", className: "whitespace-nowrap text-slate-600", firstDir: "desc" },
  { key: "usage", label: "", srLabel: "Usage", sortable: false },
];

/** This page with `patch` applied to its query; the default view (by slug, page 1) is `/tenants`. */
function href(query: TenantListQuery, patch: Partial<TenantListQuery>): string {
  const { q, tier, status, sort, dir, page } = { ...query, ...patch };
  return queryHref("/tenants", { q, tier, status, sort, dir, page }, { sort: "slug", dir: "asc", page: 1 });
}

export default async function TenantsPage({ searchParams }: { searchParams: Promise<Search> }) {
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/tenants"], "/tenants");
  if (!allowed) return <Forbidden role={principal.role} what="read tenants" />;
  const raw = await searchParams;
  const query = tenantListQuerySchema.parse({
    q: first(raw.q),
    tier: first(raw.tier),
    status: first(raw.status),
    sort: first(raw.sort),
    dir: first(raw.dir),
    page: first(raw.page),
  });
  const [{ rows, total }, tiers, live, overrides] = await Promise.all([listTenants(db(), query), listTierNames(db()), readLivePolicy(db()), listAllOverrides(db())]);
  const pages = Math.max(1, Math.ceil(total / query.pageSize));
  return (
    <>
      <PageHeader title="Tenants" description={`${total.toLocaleString("en-US")} tenant${total === 1 ? "" : "s"} match. Tenants come from the policy file (sluice apply) or the admin API; change a tenant's tier, status, keys and overrides on its page. Tier and status are the draft's; where the live policy enforces something else, both are shown (live · draft).`} />
      {can(principal.role, "policy.edit") && <CreateTenantForm tiers={tiers} create={createTenantAction} />}
      <form className="mb-4 flex flex-wrap items-end gap-3" role="search" action="/tenants">
        <div className="w-72">
          <label htmlFor="q" className="label">
            Search slug or name
          </label>
          <input id="q" name="q" className="input" defaultValue={query.q ?? ""} placeholder="acme" />
        </div>
        <div>
          <label htmlFor="tier" className="label">
            Tier
          </label>
          <select id="tier" name="tier" className="input" defaultValue={query.tier ?? ""}>
            <option value="">All tiers</option>
            {tiers.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor="status" className="label">
            Status
          </label>
          <select id="status" name="status" className="input" defaultValue={query.status ?? ""}>
            <option value="">Any status</option>
            <option value="active">active</option>
            <option value="suspended">suspended</option>
          </select>
        </div>
        {query.sort !== "slug" && <input type="hidden" name="sort" value={query.sort} />}
        {query.dir !== "asc" && <input type="hidden" name="dir" value={query.dir} />}
        <button className="btn" type="submit">
          Filter
        </button>
        {(query.q || query.tier || query.status) && (
          <Link className="text-sm text-indigo-700 hover:underline" href="/tenants">
            Clear filters
          </Link>
        )}
      </form>
      <DataTable
        testId="tenants-table"
        columns={COLUMNS}
        sort={{ key: query.sort, dir: query.dir }}
        sortHref={(sort, dir) => href(query, { sort: tenantListQuerySchema.shape.sort.parse(sort), dir, page: 1 })}
        empty={
          <EmptyState title={total === 0 && !query.q && !query.tier && !query.status ? "No tenants yet" : "No tenant matches these filters"}>
            {total === 0 && !query.q ? "Add tenants with `npm run sluice -- apply -f policy.yaml` or the admin API, then manage them here." : "Try another search or clear the filters."}
          </EmptyState>
        }
        rows={rows.map((t) => ({
          key: t.slug,
          cells: {
            slug: (
              <Link className="font-medium text-indigo-700 hover:underline" href={`/tenants/${t.slug}`}>
                {t.slug}
              </Link>
            ),
            name: t.name,
            tier: <LiveDraft live={live ? (live.tenants[t.slug]?.tier ?? null) : t.tier} draft={t.tier} />,
            status: (
              <LiveDraft
                live={live ? (live.tenants[t.slug]?.status ?? null) : t.status}
                draft={t.status}
                render={(s) => (s === "suspended" ? <span className="badge bg-red-100 text-red-800">suspended</span> : <span>active</span>)}
              />
            ),
            activeKeys: t.activeKeys,
            createdAt: formatTime(t.createdAt),
            usage: (
              <Link className="whitespace-nowrap text-indigo-700 hover:underline" href={`/dashboards/tenants/${t.slug}`} aria-label={`Usage dashboard of ${t.slug}`}>
                Usage
              </Link>
            ),
          },
        }))}
      />
      {pages > 1 && (
        <nav aria-label="Pagination" className="mt-3 flex items-center justify-between text-sm">
          <span className="text-slate-600">
            Page {query.page} of {pages.toLocaleString("en-US")}
          </span>
          <span className="flex gap-2">
            {query.page > 1 ? (
              <Link className="btn" href={href(query, { page: query.page - 1 })}>
                ← Previous
              </Link>
            ) : null}
            {query.page < pages ? (
              <Link className="btn" href={href(query, { page: query.page + 1 })}>
                Next →
              </Link>
            ) : null}
          </span>
        </nav>
      )}
      <Section title={`Overrides, all tenants (${overrides.total})`} description="Every tenant's overrides in the draft, soonest expiry first; an expired one is enforced by nothing. Edit one on its tenant's page.">
        <OverridesList nowMs={overrides.asOfMs} total={overrides.total} rows={overrides.rows.map((o) => ({ ...o, expiresAt: o.expiresAt?.toISOString() ?? null }))} />
      </Section>
    </>
  );
}
