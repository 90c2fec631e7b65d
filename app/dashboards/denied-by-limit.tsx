/** The dashboards' "429s by limit" panel for the page's range: which limit denied whom. */
import { db } from "@/lib/db/client";
import { DASHBOARD_RANGES, type DashboardRange } from "@/lib/services/observe/usage-dashboard";
import { deniedByLimitForRange } from "@/lib/services/observe/tenant-usage";

export async function DeniedByLimit({ range, nowMs, custom }: { range: DashboardRange; nowMs: number; custom?: { fromMs: number; toMs: number } }) {
  const toMs = Math.floor((custom?.toMs ?? nowMs) / 60_000) * 60_000;
  const fromMs = custom ? custom.fromMs : toMs - DASHBOARD_RANGES[range].ms;
  const rows = await deniedByLimitForRange(db(), { fromMs, toMs });
  return (
    <div className="card" data-testid="denied-by-limit-panel">
      <h3 className="mb-2 text-sm font-semibold">429s by the limit that denied them ({custom ? "custom range" : range})</h3>
      {rows.length === 0 ? (
        <p className="text-sm text-slate-600">No request was denied by a limit in this range.</p>
      ) : (
        <div className="overflow-x-auto">
          <table className="table">
            <thead>
              <tr>
                <th>Tenant</th>
                <th>Limit</th>
                <th>Operation</th>
                <th className="text-right">429s</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={`${r.tenant}|${r.operation}|${r.limit}`}>
                  <td>{r.tenant}</td>
                  <td className="font-mono text-xs">{r.limit}</td>
                  <td className="font-mono text-xs">{r.operation}</td>
                  <td className="text-right tabular-nums">rate_limited × {r.denied.toLocaleString("en-US")}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
