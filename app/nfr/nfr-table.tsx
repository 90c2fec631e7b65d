/**
 * The published policy as non-functional requirements (on /nfr): the rows `sluice nfr` prints,
 * from the same function (lib/services/justify/nfr.ts), so the page and the command agree by construction.
 * Sixteen columns of sentences do not fit a page as a table (it was 3,432 px wide in a 1,022 px
 * card): each row is a block instead — what it is about on one line, every requirement under it as
 * a labelled line that wraps — so it fits at any width. The CSV and markdown downloads stay tables.
 */
import { NFR_COLUMNS, type NfrRow } from "@/lib/services/justify/nfr";

/** The columns that say which limit a row is about: its heading. The rest are its requirements. */
const HEADING_KEYS = new Set<keyof NfrRow>(["tier", "tenant", "operation", "scope", "kind", "limit"]);

export function NfrTable({ rows }: { rows: NfrRow[] }) {
  const details = NFR_COLUMNS.filter((c) => !HEADING_KEYS.has(c.key));
  return (
    <ol className="flex flex-col gap-3" data-testid="nfr-table">
      {rows.map((r, i) => (
        <li key={i} className="card min-w-0 text-xs" data-testid="nfr-row">
          <h3 className="mb-2 text-sm font-semibold [overflow-wrap:anywhere]">
            {r.tier}
            {r.tenant ? ` · tenant ${r.tenant}` : ""} · {r.operation} · {r.scope} — {r.kind} {r.limit}
          </h3>
          <dl className="grid grid-cols-1 gap-x-4 gap-y-1 sm:grid-cols-[11rem_minmax(0,1fr)]">
            {details
              .filter((c) => (r[c.key] ?? "") !== "")
              .map((c) => (
                <div key={c.key} className="contents">
                  <dt className="font-medium text-slate-500">{c.title}</dt>
                  <dd className="mb-1 min-w-0 [overflow-wrap:anywhere] sm:mb-0">{r[c.key]}</dd>
                </div>
              ))}
          </dl>
        </li>
      ))}
    </ol>
  );
}
