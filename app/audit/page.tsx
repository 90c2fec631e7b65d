import Link from "next/link";
import { EmptyState, Forbidden, formatTime, PageHeader } from "@/components/ui";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { AUDIT_PAGE_SIZE, auditQuerySchema, listAuditEntities, listAuditEntries } from "@/lib/db/ui-policy";

export const metadata = { title: "Audit log · Sluice" };

type Search = Record<string, string | string[] | undefined>;
const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) || undefined;

/** One line of the record; the whole of it on demand (rows stay one line tall). */
function Json({ value }: { value: unknown }) {
  if (value === null || value === undefined) return <span className="text-slate-400">—</span>;
  const line = JSON.stringify(value);
  if (line.length <= 34) return <code className="font-mono text-xs break-all">{line}</code>;
  return (
    <details className="max-w-52">
      <summary className="cursor-pointer truncate font-mono text-xs text-slate-700">{line.slice(0, 30)}…</summary>
      <pre className="mt-1 max-h-60 overflow-auto rounded bg-slate-50 p-2 font-mono text-xs whitespace-pre-wrap">{JSON.stringify(value, null, 2)}</pre>
    </details>
  );
}

export default async function AuditPage({ searchParams }: { searchParams: Promise<Search> }) {
  const { principal, allowed } = await pageAccess("audit.read", "/audit");
  if (!allowed) return <Forbidden role={principal.role} what="read the audit log" />;
  const raw = await searchParams;
  const query = auditQuerySchema.parse({ actor: first(raw.actor), entity: first(raw.entity), from: first(raw.from), to: first(raw.to), page: first(raw.page) });
  const [{ rows, total }, entities] = await Promise.all([listAuditEntries(db(), query), listAuditEntities(db())]);
  const pages = Math.max(1, Math.ceil(total / AUDIT_PAGE_SIZE));
  const pageHref = (page: number) => {
    const p = new URLSearchParams();
    for (const k of ["actor", "entity", "from", "to"] as const) if (query[k]) p.set(k, String(query[k]));
    p.set("page", String(page));
    return `/audit?${p.toString()}`;
  };
  return (
    <>
      <PageHeader title="Audit log" description="Every change with who made it, when, and the record before and after. Written in the same transaction as the change." />
      <form className="mb-4 flex flex-wrap items-end gap-3" action="/audit">
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
        <button className="btn" type="submit">
          Filter
        </button>
        <Link className="text-sm text-indigo-700 hover:underline" href="/audit">
          Clear
        </Link>
      </form>
      {rows.length === 0 ? (
        <EmptyState title="No audit entries match">Changes made in the UI, the CLI or the admin API appear here.</EmptyState>
      ) : (
        <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
          <table className="table" data-testid="audit-table">
            <thead>
              <tr>
                <th>When</th>
                <th>Actor</th>
                <th>Action</th>
                <th>Entity</th>
                <th>Before</th>
                <th>After</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id}>
                  <td className="whitespace-nowrap">{formatTime(r.at)}</td>
                  <td>{r.actor}</td>
                  <td className="font-mono text-xs">{r.action}</td>
                  <td>
                    {r.entity}
                    {r.entityId && <div className="max-w-40 truncate font-mono text-xs text-slate-500" title={r.entityId}>{r.entityId}</div>}
                  </td>
                  <td>
                    <Json value={r.before} />
                  </td>
                  <td>
                    <Json value={r.after} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {pages > 1 && (
        <nav aria-label="Pagination" className="mt-3 flex items-center gap-2 text-sm">
          {query.page > 1 && (
            <Link className="btn" href={pageHref(query.page - 1)}>
              ← Newer
            </Link>
          )}
          <span className="text-slate-600">
            Page {query.page} of {pages}
          </span>
          {query.page < pages && (
            <Link className="btn" href={pageHref(query.page + 1)}>
              Older →
            </Link>
          )}
        </nav>
      )}
    </>
  );
}
