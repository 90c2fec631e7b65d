/**
 * Sorting for the control plane's tables, pure and framework-free: the comparison a column sorts
 * by, the stable sort of small (unpaged) lists in the browser, the header's next state and its
 * `aria-sort`, and the link of a server-sorted (paged) table. Paged tables sort in the database
 * through URL search parameters, parsed with zod where they are read (lib/db/ui-tenants.ts,
 * lib/db/ui-policy.ts), so a sort covers the whole result set, not one page.
 */

export type SortDir = "asc" | "desc";

/** What one cell sorts by. null, undefined, NaN, an invalid Date and "" are "no value". */
export type SortValue = string | number | boolean | Date | null | undefined;

export interface SortState {
  /** The column key. */
  key: string;
  dir: SortDir;
}

// One fixed locale, so the server render and the browser agree (no hydration mismatch);
// `numeric` puts "key-9" before "key-10", the order a reader expects.
const collator = new Intl.Collator("en", { numeric: true, sensitivity: "base" });

function isMissing(v: SortValue): v is null | undefined {
  if (v === null || v === undefined || v === "") return true;
  if (typeof v === "number") return Number.isNaN(v);
  if (v instanceof Date) return Number.isNaN(v.getTime());
  return false;
}

/** Values of different kinds in one column still sort consistently: booleans, numbers, dates, strings. */
function kindRank(v: string | number | boolean | Date): number {
  if (typeof v === "boolean") return 0;
  if (typeof v === "number") return 1;
  if (v instanceof Date) return 2;
  return 3;
}

/**
 * Ascending comparison of two present values: numbers as numbers (2 < 10), dates in time order,
 * strings by a case-insensitive natural collation, false before true.
 */
export function compareValues(a: string | number | boolean | Date, b: string | number | boolean | Date): number {
  const ka = kindRank(a);
  const kb = kindRank(b);
  if (ka !== kb) return ka - kb;
  if (typeof a === "string" && typeof b === "string") return collator.compare(a, b);
  if (a instanceof Date && b instanceof Date) return a.getTime() - b.getTime();
  const na = Number(a);
  const nb = Number(b);
  return na < nb ? -1 : na > nb ? 1 : 0;
}

/**
 * Sorts a copy of `rows` by `value(row)` in `dir`. Rows without a value come last in both
 * directions; rows that compare equal keep their original order (stable, whatever the engine).
 */
export function sortRows<Row>(rows: readonly Row[], value: (row: Row) => SortValue, dir: SortDir): Row[] {
  const sign = dir === "asc" ? 1 : -1;
  return rows
    .map((row, index) => ({ row, index, v: value(row) }))
    .sort((x, y) => {
      const xm = isMissing(x.v);
      const ym = isMissing(y.v);
      if (xm || ym) return xm && ym ? x.index - y.index : xm ? 1 : -1;
      return sign * compareValues(x.v as string | number | boolean | Date, y.v as string | number | boolean | Date) || x.index - y.index;
    })
    .map((d) => d.row);
}

/**
 * The sort after a click on column `key`: the sorted column flips direction; another column
 * starts at its `firstDir` (ascending unless the column says otherwise, e.g. "newest first").
 */
export function nextSort(current: SortState | null, key: string, firstDir: SortDir = "asc"): SortState {
  if (current && current.key === key) return { key, dir: current.dir === "asc" ? "desc" : "asc" };
  return { key, dir: firstDir };
}

/** `aria-sort` of a header: set on the sorted column only. */
export function ariaSort(current: SortState | null, key: string): "ascending" | "descending" | undefined {
  if (!current || current.key !== key) return undefined;
  return current.dir === "asc" ? "ascending" : "descending";
}

/** The visible arrow of a sortable header: ▲ / ▼ on the sorted column, ↕ on the others. */
export function sortArrow(current: SortState | null, key: string): string {
  if (!current || current.key !== key) return "↕";
  return current.dir === "asc" ? "▲" : "▼";
}

/**
 * `path?a=1&b=2` from a page's query, leaving out empty values and those equal to the page's
 * defaults, so the plain path is the default view (and links stay short and shareable).
 */
export function queryHref(path: string, query: Record<string, string | number | null | undefined>, defaults: Record<string, string | number> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === null || v === undefined || v === "" || defaults[k] === v) continue;
    params.set(k, String(v));
  }
  const s = params.toString();
  return s ? `${path}?${s}` : path;
}
