import Link from "next/link";
import { EmptyState, Forbidden, formatTime, PageHeader } from "@/components/ui";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { listTenants, listTierNames, tenantListQuerySchema, type TenantListQuery } from "@/lib/db/ui-tenants";

export const metadata = { title: "Tenants · Sluice" };

type Search = Record<string, string | string[] | undefined>;
const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) || undefined;

function href(query: TenantListQuery, patch: Partial<TenantListQuery>): string {
  const q = { ...query, ...patch };
  const params = new URLSearchParams();
  if (q.q) params.set("q", q.q);
  if (q.tier) params.set("tier", q.tier);
  if (q.status) params.set("status", q.status);
  if (q.sort !== "slug") params.set("sort", q.sort);
  if (q.dir !== "asc") params.set("dir", q.dir);
  if (q.page > 1) params.set("page", String(q.page));
  const s = params.toString();
  return s ? `/tenants?${s}` : "/tenants";
}

export default async function TenantsPage({ searchParams }: { searchParams: Promise<Search> }) {
  const { principal, allowed } = await pageAccess("policy.read", "/tenants");
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
  const [{ rows, total }, tiers] = await Promise.all([listTenants(db(), query), listTierNames(db())]);
  const pages = Math.max(1, Math.ceil(total / query.pageSize));
  const sortHeader = (key: TenantListQuery["sort"], label: string) => {
    const active = query.sort === key;
    const dir = active && query.dir === "asc" ? "desc" : "asc";
    return (
      <th scope="col" aria-sort={active ? (query.dir === "asc" ? "ascending" : "descending") : undefined}>
        <Link href={href(query, { sort: key, dir, page: 1 })} className="inline-flex gap-1 hover:text-slate-900">
          {label} <span aria-hidden="true">{active ? (query.dir === "asc" ? "▲" : "▼") : "↕"}</span>
        </Link>
      </th>
    );
  };
  return (
    <>
      <PageHeader title="Tenants" description={`${total.toLocaleString("en-US")} tenant${total === 1 ? "" : "s"} match. Tenants come from the policy file (sluice apply) or the admin API; change a tenant's tier, status, keys and overrides on its page.`} />
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
        <button className="btn" type="submit">
          Filter
        </button>
        {(query.q || query.tier || query.status) && (
          <Link className="text-sm text-indigo-700 hover:underline" href="/tenants">
            Clear filters
          </Link>
        )}
      </form>
      {rows.length === 0 ? (
        <EmptyState title={total === 0 && !query.q && !query.tier && !query.status ? "No tenants yet" : "No tenant matches these filters"}>
          {total === 0 && !query.q ? "Add tenants with `npm run sluice -- apply -f policy.yaml` or the admin API, then manage them here." : "Try another search or clear the filters."}
        </EmptyState>
      ) : (
        <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
          <table className="table" data-testid="tenants-table">
            <thead>
              <tr>
                {sortHeader("slug", "Slug")}
                {sortHeader("name", "Name")}
                {sortHeader("tier", "Tier")}
                {sortHeader("status", "Status")}
                <th scope="col" className="text-right">
                  Active keys
                </th>
                {sortHeader("createdAt", "Created")}
              </tr>
            </thead>
            <tbody>
              {rows.map((t) => (
                <tr key={t.slug}>
                  <td>
                    <Link className="font-medium text-indigo-700 hover:underline" href={`/tenants/${t.slug}`}>
                      {t.slug}
                    </Link>
                  </td>
                  <td>{t.name}</td>
                  <td>
                    <span className="badge">{t.tier}</span>
                  </td>
                  <td>{t.status === "suspended" ? <span className="badge bg-red-100 text-red-800">suspended</span> : "active"}</td>
                  <td className="text-right tabular-nums">{t.activeKeys}</td>
                  <td className="whitespace-nowrap text-slate-600">{formatTime(t.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
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
    </>
  );
}
