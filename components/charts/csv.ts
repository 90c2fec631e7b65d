/** CSV (RFC 4180) of chart rows, for the "Download CSV" buttons. Pure: unit-tested. */
export type CsvRow = Record<string, string | number | null | undefined>;

function field(value: string | number | null | undefined): string {
  const s = value === null || value === undefined ? "" : String(value);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** Columns in `columns` order; a `t` column (epoch ms) is written as an ISO time. */
export function toCsv(rows: readonly CsvRow[], columns: readonly string[]): string {
  const lines = [columns.map(field).join(",")];
  for (const row of rows) {
    lines.push(columns.map((c) => (c === "t" && typeof row[c] === "number" ? new Date(row[c] as number).toISOString() : field(row[c]))).join(","));
  }
  return lines.join("\r\n") + "\r\n";
}
