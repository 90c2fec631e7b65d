"use client";
import { useMemo, useState, type ReactNode } from "react";

export interface Column {
  key: string;
  label: string;
  sortable?: boolean;
  align?: "left" | "right";
}
export interface Cell {
  /** What the column sorts by. */
  sort: string | number;
  display: ReactNode;
}
export interface Row {
  id: string;
  cells: Record<string, Cell>;
}

/** A table sortable by clicking its headers (client-side; for the small tables of a page). */
export function SortableTable({ columns, rows, caption, testId }: { columns: Column[]; rows: Row[]; caption?: string; testId?: string }) {
  const [sort, setSort] = useState<{ key: string; dir: 1 | -1 } | null>(null);
  const sorted = useMemo(() => {
    if (!sort) return rows;
    return [...rows].sort((a, b) => {
      const x = a.cells[sort.key]?.sort ?? "";
      const y = b.cells[sort.key]?.sort ?? "";
      return (x < y ? -1 : x > y ? 1 : 0) * sort.dir;
    });
  }, [rows, sort]);
  return (
    <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
      <table className="table" data-testid={testId}>
        {caption && <caption className="sr-only">{caption}</caption>}
        <thead>
          <tr>
            {columns.map((c) => {
              const active = sort?.key === c.key;
              return (
                <th
                  key={c.key}
                  scope="col"
                  className={c.align === "right" ? "text-right" : undefined}
                  aria-sort={active ? (sort.dir === 1 ? "ascending" : "descending") : undefined}
                >
                  {c.sortable === false ? (
                    c.label
                  ) : (
                    <button
                      type="button"
                      className="inline-flex items-center gap-1 uppercase hover:text-slate-900"
                      onClick={() => setSort(active && sort.dir === 1 ? { key: c.key, dir: -1 } : { key: c.key, dir: 1 })}
                    >
                      {c.label}
                      <span aria-hidden="true">{active ? (sort.dir === 1 ? "▲" : "▼") : "↕"}</span>
                    </button>
                  )}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {sorted.map((r) => (
            <tr key={r.id}>
              {columns.map((c) => (
                <td key={c.key} className={c.align === "right" ? "text-right tabular-nums" : undefined}>
                  {r.cells[c.key]?.display ?? ""}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
