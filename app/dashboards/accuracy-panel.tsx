/**
 * "Approximation vs exact log" per limit (on the dashboards): for the sampled subjects of each
 * approximate limit, what the limit admitted beside what an exact sliding-window log kept in the
 * same script would have admitted, against the tolerance the live policy states
 * (SLUICE_ACCURACY_SAMPLE; docs/proving.md).
 */
import type { AccuracyRow } from "@/lib/services/justify/accuracy-report";
import { num, pct } from "@/components/format-numbers";

export function AccuracyPanel({ rows }: { rows: AccuracyRow[] }) {
  return (
    <div className="card" data-testid="accuracy-panel">
      <h3 className="mb-1 text-sm font-semibold text-slate-800">Approximation vs exact log, per limit</h3>
      <p className="mb-2 text-xs text-slate-600">
        Sampled subjects (SLUICE_ACCURACY_SAMPLE, chosen by hash) are also counted by an exact sliding-window log. Divergence = |admitted by the limit − admitted by the log| ÷ admitted by the
        log; the accuracy_divergence alert opens past the policy&apos;s tolerance (over 15 minutes, at least 100 admitted by the log).
      </p>
      {rows.length === 0 ? (
        <p className="text-sm text-slate-500" data-testid="accuracy-empty">
          No sampled decisions in this range (no approximate limit was hit by a sampled subject, or SLUICE_ACCURACY_SAMPLE is 0).
        </p>
      ) : (
        <div className="overflow-x-auto">
          <table className="table" data-testid="accuracy-table">
            <thead>
              <tr>
                <th>tier</th>
                <th>limit</th>
                <th className="text-right">sampled</th>
                <th className="text-right">admitted by the limit</th>
                <th className="text-right">by the exact log</th>
                <th className="text-right">divergence</th>
                <th className="text-right">tolerance</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => {
                const over = r.divergence !== null && r.tolerance !== null && r.divergence > r.tolerance;
                return (
                  <tr key={`${r.tier}|${r.limit}`} data-testid="accuracy-row" data-over={over ? "true" : "false"}>
                    <td>{r.tier}</td>
                    <td className="font-mono text-xs">{r.limit}</td>
                    <td className="text-right tabular-nums">{num(r.sampled)}</td>
                    <td className="text-right tabular-nums">{num(r.limitAdmitted)}</td>
                    <td className="text-right tabular-nums">{num(r.exactAdmitted)}</td>
                    <td className={`text-right tabular-nums ${over ? "font-semibold text-red-700" : ""}`}>{r.divergence === null ? "—" : pct(r.divergence)}</td>
                    <td className="text-right tabular-nums">{r.tolerance === null ? "not held to a log" : pct(r.tolerance)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
