"use client";
import { toCsv, type CsvRow } from "./csv";

/** Downloads the chart's own rows as CSV (generated in the browser from the data it draws). */
export function CsvButton({ rows, columns, filename }: { rows: readonly CsvRow[]; columns: readonly string[]; filename: string }) {
  return (
    <button
      type="button"
      className="text-xs text-indigo-700 hover:underline"
      data-testid={`csv-${filename}`}
      onClick={() => {
        const blob = new Blob([toCsv(rows, columns)], { type: "text/csv;charset=utf-8" });
        const url = URL.createObjectURL(blob);
        const a = document.createElement("a");
        a.href = url;
        a.download = `${filename}.csv`;
        a.click();
        setTimeout(() => URL.revokeObjectURL(url), 1_000);
      }}
    >
      Download CSV
    </button>
  );
}
