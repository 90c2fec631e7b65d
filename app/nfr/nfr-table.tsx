/**
 * The published policy as non-functional requirements (on /nfr): the rows `sluice nfr` prints,
 * from the same function (lib/services/nfr.ts), so the page and the command agree by construction.
 */
import { NFR_COLUMNS, type NfrRow } from "@/lib/services/nfr";

export function NfrTable({ rows }: { rows: NfrRow[] }) {
  const columns = NFR_COLUMNS.filter((c) => c.key !== "tenant" || rows.some((r) => r.tenant !== null));
  return (
    <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
      <table className="table text-xs" data-testid="nfr-table">
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.key} scope="col" className="whitespace-nowrap">
                {c.title}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={i} data-testid="nfr-row">
              {columns.map((c) => (
                <td key={c.key} className={c.key === "boundary" || c.key === "edgeBurst" || c.key === "headers" ? "min-w-64" : "whitespace-nowrap"}>
                  {r[c.key] ?? ""}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
