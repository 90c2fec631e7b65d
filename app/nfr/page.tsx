import Link from "next/link";
import { NfrTable } from "./nfr-table";
import { EmptyState, Forbidden, formatTime, PageHeader } from "@/components/ui";
import { PAGE_ACTIONS } from "@/lib/auth/pages";
import { pageAccess } from "@/lib/auth/session";
import { db } from "@/lib/db/client";
import { listPolicyVersions } from "@/lib/db/ui-policy";
import { ServiceError } from "@/lib/services/errors";
import { firstParams } from "@/lib/services/justify/justify-input";
import { nfrPage, parseNfrQuery } from "@/lib/services/justify/nfr-page";

export const metadata = { title: "Non-functional requirements · Sluice" };
export const dynamic = "force-dynamic";

export default async function NfrPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { principal, allowed } = await pageAccess(PAGE_ACTIONS["/nfr"], "/nfr");
  if (!allowed) return <Forbidden role={principal.role} what="read the policy" />;
  const raw = firstParams(await searchParams, ["version"]);
  const versions = await listPolicyVersions(db());
  let error: string | null = null;
  let page: Awaited<ReturnType<typeof nfrPage>> | null = null;
  try {
    page = versions.length === 0 ? null : await nfrPage(db(), parseNfrQuery(raw).version);
  } catch (e) {
    if (e instanceof ServiceError) error = e.message;
    else throw e;
  }
  const v = page?.doc.version;
  return (
    <>
      <PageHeader
        title="Non-functional requirements"
        description={
          <>
            The published policy as requirements, per tier × operation × scope: the same table <code>sluice nfr</code> prints. The boundary, the burst at a window edge, the delays and the
            headers are what the decision engine does with each limit, run alone.
          </>
        }
        actions={
          v !== undefined ? (
            <>
              <a className="btn" href={`/nfr/export?version=${v}&format=markdown`}>
                Markdown
              </a>
              <a className="btn" href={`/nfr/export?version=${v}&format=csv`}>
                CSV
              </a>
            </>
          ) : null
        }
      />
      {versions.length === 0 ? (
        <EmptyState title="Nothing published yet">The requirements are those of a published version; publish the draft first.</EmptyState>
      ) : (
        <>
          <form method="get" action="/nfr" className="mb-4 flex flex-wrap items-end gap-2">
            <div>
              <label className="label" htmlFor="nfr-version">
                Version
              </label>
              <select id="nfr-version" name="version" className="input" defaultValue={v ?? raw.version}>
                {versions.map((x, i) => (
                  <option key={x.version} value={x.version}>
                    v{x.version}
                    {i === 0 ? " (live)" : ""} · {formatTime(x.createdAt)}
                  </option>
                ))}
              </select>
            </div>
            <button type="submit" className="btn">
              Show
            </button>
            {v !== undefined && (
              <Link className="pb-2 text-sm text-indigo-700 hover:underline" href="/policy">
                certification of each version
              </Link>
            )}
          </form>
          {error && (
            <p role="alert" className="card mb-4 border-red-300 bg-red-50 text-sm text-red-800" data-testid="nfr-error">
              {error}
            </p>
          )}
          {page && (
            <>
              <p className="mb-2 text-sm text-slate-600" data-testid="nfr-version">
                Policy v{page.doc.version}, published {formatTime(page.doc.createdAt)}, checksum <span className="font-mono">{page.doc.checksum.slice(0, 12)}</span> — {page.rows.length} rows.
              </p>
              <NfrTable rows={page.rows} />
            </>
          )}
        </>
      )}
    </>
  );
}
