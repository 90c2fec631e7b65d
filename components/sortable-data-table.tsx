"use client";
/**
 * A DataTable sorted in the browser, for small unpaged lists (API keys, users, tokens, billing
 * periods, recent changes). Rows arrive in the server's order, which is shown until a header is
 * clicked (or `initialSort` orders them). Rows are plain data plus rendered cells, so a server page
 * can pass them as they are.
 */
import { useMemo, useState } from "react";
import { DataTable, rowSortValue, type DataTableProps } from "./data-table";
import { nextSort, sortRows, type SortState } from "./table-sort";

export function SortableDataTable({ initialSort = null, ...props }: Omit<DataTableProps, "sort" | "sortHref" | "onSort"> & { initialSort?: SortState | null }) {
  const [sort, setSort] = useState<SortState | null>(initialSort);
  const { rows, columns } = props;
  const sorted = useMemo(() => (sort ? sortRows(rows, (r) => rowSortValue(r, sort.key), sort.dir) : rows), [rows, sort]);
  return (
    <DataTable
      {...props}
      rows={sorted}
      sort={sort}
      onSort={(key) => setSort((s) => nextSort(s, key, columns.find((c) => c.key === key)?.firstDir))}
    />
  );
}
