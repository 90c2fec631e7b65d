"use client";
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { CsvButton } from "./csv-button";

export interface QuotaBurnRow {
  tenant: string;
  quotaId: string;
  operation: string;
  limit: number;
  used: number;
  projected: number;
  runsOutAt: string | null;
}

/** Monthly quota burn: used and projected at month end against the limit, most urgent first. */
export function QuotaBurnChart({ rows }: { rows: readonly QuotaBurnRow[] }) {
  const data = rows.slice(0, 15).map((r) => ({
    name: `${r.tenant}${r.operation === "*" ? "" : ` · ${r.operation}`}`,
    usedPct: r.limit > 0 ? Math.round((r.used / r.limit) * 1000) / 10 : 0,
    projectedPct: r.limit > 0 ? Math.round((r.projected / r.limit) * 1000) / 10 : 0,
  }));
  return (
    <div className="card" data-testid="chart-quota-burn">
      <div className="mb-2 flex items-center justify-between">
        <h3 className="text-sm font-semibold text-slate-800">Monthly quota burn (% of limit)</h3>
        <CsvButton rows={rows.map((r) => ({ ...r }))} columns={["tenant", "quotaId", "operation", "limit", "used", "projected", "runsOutAt"]} filename="quota-burn" />
      </div>
      <ResponsiveContainer width="100%" height={Math.max(160, data.length * 26 + 40)}>
        <BarChart data={data} layout="vertical" margin={{ top: 4, right: 16, bottom: 0, left: 8 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="#e2e8f0" />
          <XAxis type="number" unit="%" fontSize={11} />
          <YAxis type="category" dataKey="name" width={120} fontSize={11} />
          <Tooltip />
          <Legend wrapperStyle={{ fontSize: 12 }} />
          <Bar dataKey="usedPct" name="used" fill="#4f46e5" isAnimationActive={false} />
          <Bar dataKey="projectedPct" name="projected at month end" fill="#a5b4fc" isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}
