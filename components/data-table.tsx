/**
 * The one table of the control plane: header, rows, empty state and sortable column headers.
 * No hooks and no "use client", so it renders in server pages and inside client components alike.
 *
 * Two ways to sort:
 * - paged tables (tenants, audit log) sort in the database: pass `sort` (parsed from the URL) and
 *   `sortHref(key, dir)`; each sortable header is a link to the page with the new sort;
 * - small unpaged lists sort in the browser: use `SortableDataTable` (./sortable-data-table),
 *   which keeps the sort in state and passes `onSort`; each sortable header is a button.
 * Either way the sorted header carries `aria-sort` and a visible arrow, and every header control is
 * a link or a button, so the keyboard reaches it.
 */
import Link from "next/link";
import type { ReactNode } from "react";
import { ariaSort, nextSort, sortArrow, type SortDir, type SortState, type SortValue } from "./table-sort";

export interface Column {
  /** Names the column in `TableRow.cells` / `values` and in the sort state (`?sort=<key>`). */
  key: string;
  label: ReactNode;
  /** Read by screen readers when the visible label is empty (an actions column). */
  srLabel?: string;
  align?: "left" | "right" | "center";
  /** Classes of this column's cells. */
  className?: string;
  /** Default true: the header sorts when the table sorts. */
  sortable?: boolean;
  /** Direction of the first click (default ascending; "newest first" columns say desc). */
  firstDir?: SortDir;
}

export interface TableRow {
  /** React key, unique in the table. */
  key: string;
  cells: Record<string, ReactNode>;
  /**
   * What each column sorts by in the browser (a number, a Date, a string…). A column missing here
   * sorts by its cell when the cell is a plain string or number, else the row has no value (last).
   */
  values?: Record<string, SortValue>;
  className?: string;
  testId?: string;
}

export interface DataTableProps {
  columns: readonly Column[];
  rows: readonly TableRow[];
  /** Shown instead of the table when there is no row. */
  empty?: ReactNode;
  sort?: SortState | null;
  /** Server-sorted: the link of the page sorted by `key` in `dir`. */
  sortHref?: (key: string, dir: SortDir) => string;
  /** Browser-sorted: called with the clicked column's key. */
  onSort?: (key: string) => void;
  testId?: string;
  /** Default true: a bordered box. False inside a card that already frames it. Both scroll sideways when too wide. */
  framed?: boolean;
}

const ALIGN = { left: "text-left", right: "text-right", center: "text-center" } as const;
// Inline (not flex) with a space before the arrow: in a narrow card the arrow wraps under its
// label instead of widening the column.
const SORT_CONTROL =
  "rounded font-semibold tracking-wide uppercase hover:text-slate-900 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-indigo-500";

/** The value a row sorts by in column `key` (see `TableRow.values`). */
export function rowSortValue(row: TableRow, key: string): SortValue {
  if (row.values && key in row.values) return row.values[key];
  const cell = row.cells[key];
  return typeof cell === "string" || typeof cell === "number" ? cell : null;
}

function HeaderCell({ column, sort, sortHref, onSort }: { column: Column } & Pick<DataTableProps, "sort" | "sortHref" | "onSort">) {
  const sorts = column.sortable !== false && (sortHref !== undefined || onSort !== undefined);
  const align = ALIGN[column.align ?? "left"];
  const state = sort ?? null;
  if (!sorts) {
    return (
      <th scope="col" className={align}>
        {column.label}
        {column.srLabel && <span className="sr-only">{column.srLabel}</span>}
      </th>
    );
  }
  const content = (
    <>
      {column.label}{" "}
      <span aria-hidden="true" className={state?.key === column.key ? "text-slate-900" : "text-slate-400"}>
        {sortArrow(state, column.key)}
      </span>
    </>
  );
  const next = nextSort(state, column.key, column.firstDir);
  return (
    <th scope="col" className={align} aria-sort={ariaSort(state, column.key)}>
      {sortHref ? (
        <Link href={sortHref(next.key, next.dir)} className={`${SORT_CONTROL} ${align}`} scroll={false}>
          {content}
        </Link>
      ) : (
        <button type="button" className={`${SORT_CONTROL} ${align}`} onClick={() => onSort?.(column.key)}>
          {content}
        </button>
      )}
    </th>
  );
}

export function DataTable({ columns, rows, empty, sort, sortHref, onSort, testId, framed = true }: DataTableProps) {
  if (rows.length === 0 && empty !== undefined) return <>{empty}</>;
  const table = (
    <table className="table" data-testid={testId}>
      <thead>
        <tr>
          {columns.map((c) => (
            <HeaderCell key={c.key} column={c} sort={sort} sortHref={sortHref} onSort={onSort} />
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.key} className={r.className} data-testid={r.testId}>
            {columns.map((c) => {
              const cls = [c.align && c.align !== "left" ? ALIGN[c.align] : "", c.className ?? ""].join(" ").trim();
              return (
                <td key={c.key} className={cls || undefined}>
                  {r.cells[c.key]}
                </td>
              );
            })}
          </tr>
        ))}
      </tbody>
    </table>
  );
  // relative: screen-reader-only labels (position: absolute) stay inside the scrolling box instead
  // of widening the page on a narrow screen.
  return <div className={framed ? "relative overflow-x-auto rounded-lg border border-slate-200 bg-white" : "relative overflow-x-auto"}>{table}</div>;
}
