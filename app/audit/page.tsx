import Link from "next/link";
import { auditCells } from "@/components/audit-cells";
import { DataTable, type Column } from "@/components/data-table";
import { queryHref } from "@/components/table-sort";
import { EmptyState, Forbidden, PageHeader } from "@/components/ui";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { auditDiff, auditSearchTargets, entityNames, type FieldChange } from "@/lib/services/observe/audit-view";
import { AUDIT_DEFAULT_SORT, AUDIT_PAGE_SIZE, auditQuerySchema, listAuditEntities, listAuditEntries, type AuditQuery } from "@/lib/db/ui-policy";

export const metadata = { title: "Audit log · Sluice" };

type Search = Record<string, string | string[] | undefined>;
const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) || undefined;

function Value({ value }: { value: unknown }) {
  if (value === undefined) return <span className="text-slate-400">(none)</span>;
  const line = JSON.stringify(value);
  if (line.length <= 60) return <code className="font-mono text-xs break-all">{line}</code>;
  return (
    <details className="inline-block max-w-full align-top">
      <summary className="cursor-pointer font-mono text-xs break-all text-slate-700">{line.slice(0, 56)}…</summary>
      <pre className="mt-1 max-h-60 overflow-auto rounded bg-slate-50 p-2 font-mono text-xs whitespace-pre-wrap">{JSON.stringify(value, null, 2)}</pre>
    </details>
  );
}

/** Only the fields the change touched: `field: before → after` (a creation lists what it set, a deletion what it removed). */
function Changes({ changes }: { changes: FieldChange[] }) {
  if (changes.length === 0) return <span className="text-slate-400">no field changed</span>;
  return (
    <ul className="flex flex-col gap-0.5" data-testid="audit-changes">
      {changes.map((c) => (
        <li key={c.field} className="text-xs break-words">
          <span className="font-medium text-slate-700">{c.field}</span>:{" "}
          {c.before !== undefined && c.after !== undefined ? (
            <>
              <Value value={c.before} /> <span aria-label="changed to">→</span> <Value value={c.after} />
            </>
          ) : c.after !== undefined ? (
            <>
              <span className="text-green-700">set</span> <Value value={c.after} />
            </>
          ) : (
            <>
              <span className="text-red-700">removed</span> <Value value={c.before} />
            </>
          )}
        </li>
      ))}
    </ul>
  );
}

const COLUMNS: Column[] = [
  { key: "at", label: "When", className: "whitespace-nowrap", firstDir: "desc" },
  { key: "actor", label: "Actor" },
  { key: "action", label: "Action", className: "font-mono text-xs" },
  { key: "entity", label: "Entity" },
  { key: "changes", label: "Changes (before → after)", className: "min-w-64", sortable: false },
];

/** This page with `patch` applied to its query; the default view (newest first, page 1) is `/audit`. */
function href(query: AuditQuery, patch: Partial<AuditQuery>): string {
  const { q, actor, entity, from, to, sort, dir, page } = { ...query, ...patch };
  return queryHref("/audit", { q, actor, entity, from, to, sort, dir, page }, { ...AUDIT_DEFAULT_SORT, page: 1 });
}

export default async function AuditPage({ searchParams }: { searchParams: Promise<Search> }) {
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/audit"], "/audit");
  if (!allowed) return <Forbidden role={principal.role} what="read the audit log" />;
  const raw = await searchParams;
  const query = auditQuerySchema.parse({ q: first(raw.q), actor: first(raw.actor), entity: first(raw.entity), from: first(raw.from), to: first(raw.to), sort: first(raw.sort), dir: first(raw.dir), page: first(raw.page) });
  const targets = query.q ? await auditSearchTargets(db(), query.q) : undefined;
  const [{ rows, total }, entities] = await Promise.all([listAuditEntries(db(), query, targets), listAuditEntities(db())]);
  const names = await entityNames(db(), rows);
  const pages = Math.max(1, Math.ceil(total / AUDIT_PAGE_SIZE));
  const newestFirst = query.sort === "at" && query.dir === "desc";
  return (
    <>
      <PageHeader title="Audit log" description="Every change with who made it, when, and the fields it changed, before and after. Written in the same transaction as the change." />
      <form className="mb-4 flex flex-wrap items-end gap-3" action="/audit" role="search">
        <div className="w-full sm:w-64">
          <label className="label" htmlFor="audit-q">
            Search
          </label>
          <input className="input" id="audit-q" name="q" type="search" defaultValue={query.q ?? ""} placeholder="a user’s email, a tenant, an action…" />
        </div>
        <div>
          <label className="label" htmlFor="actor">
            Actor
          </label>
          <input className="input" id="actor" name="actor" defaultValue={query.actor ?? ""} placeholder="email or token" />
        </div>
        <div>
          <label className="label" htmlFor="entity">
            Entity
          </label>
          <select className="input" id="entity" name="entity" defaultValue={query.entity ?? ""}>
            <option value="">All entities</option>
            {entities.map((e) => (
              <option key={e}>{e}</option>
            ))}
          </select>
        </div>
        <div>
          <label className="label" htmlFor="from">
            From (UTC day)
          </label>
          <input className="input" type="date" id="from" name="from" defaultValue={query.from ?? ""} />
        </div>
        <div>
          <label className="label" htmlFor="to">
            To (UTC day)
          </label>
          <input className="input" type="date" id="to" name="to" defaultValue={query.to ?? ""} />
        </div>
        {query.sort !== AUDIT_DEFAULT_SORT.sort && <input type="hidden" name="sort" value={query.sort} />}
        {query.dir !== AUDIT_DEFAULT_SORT.dir && <input type="hidden" name="dir" value={query.dir} />}
        <button className="btn" type="submit">
          Filter
        </button>
        <Link className="text-sm text-indigo-700 hover:underline" href="/audit">
          Clear
        </Link>
      </form>
      <DataTable
        testId="audit-table"
        columns={COLUMNS}
        sort={{ key: query.sort, dir: query.dir }}
        sortHref={(sort, dir) => href(query, { sort: auditQuerySchema.shape.sort.parse(sort), dir, page: 1 })}
        empty={<EmptyState title="No audit entries match">Changes made in the UI, the CLI or the admin API appear here.</EmptyState>}
        rows={rows.map((r, i) => ({
          key: r.id,
          cells: {
            ...auditCells({ ...r, name: names[i] }),
            changes: <Changes changes={auditDiff(r.before, r.after)} />,
          },
        }))}
      />
      {pages > 1 && (
        <nav aria-label="Pagination" className="mt-3 flex items-center gap-2 text-sm">
          {query.page > 1 && (
            <Link className="btn" href={href(query, { page: query.page - 1 })}>
              {newestFirst ? "← Newer" : "← Previous"}
            </Link>
          )}
          <span className="text-slate-600">
            Page {query.page} of {pages}
          </span>
          {query.page < pages && (
            <Link className="btn" href={href(query, { page: query.page + 1 })}>
              {newestFirst ? "Older →" : "Next →"}
            </Link>
          )}
        </nav>
      )}
    </>
  );
}
