/**
 * The Policy page's cohort-against-control charts of the running (or latest) rollout
 * (docs/control-plane.md#cohort-against-control-charts): the data is read on the server
 * (lib/services/rollout/rollout-charts.ts); the charts are the Dashboards' client leaves.
 */
import { TimeChart } from "@/components/charts/time-chart";
import type { RolloutCharts } from "@/lib/services/rollout/rollout-charts";

const COHORT = "#4f46e5";
const CONTROL = "#64748b";

export function RolloutChartsPanel({ charts }: { charts: RolloutCharts }) {
  const running = charts.state === "running" || charts.state === "paused";
  const markers = charts.steps.map((s) => ({ version: s.step, t: s.t, label: `step ${s.step}` }));
  const span = `${new Date(charts.fromMs).toISOString().slice(11, 16)}–${new Date(charts.toMs).toISOString().slice(11, 16)} UTC`;
  return (
    <section className="mb-6" data-testid="rollout-charts">
      <div className="mb-2">
        <h2 className="text-base font-semibold">
          Rollout {charts.rollout}: cohort against control, per minute {running ? "" : `(${charts.state})`}
        </h2>
        <p className="text-sm text-slate-600">
          {running ? "While the rollout runs" : "Over the rollout's duration"}, {span}
          {charts.truncated ? " (its last 6 hours)" : ""}: the cohort is the tenants of the step that ran in each minute, the control everyone else on the same
          operations, and the 429 share counts 429s only (limits and quotas; 401, 403 and 503 are not 429s) — the figures the guardrail judges. The running minute is not drawn.
        </p>
      </div>
      {charts.points.length === 0 ? (
        <p className="card text-sm text-slate-600" data-testid="rollout-charts-empty">
          No finished minute yet: the first one is drawn a minute after the rollout started.
        </p>
      ) : (
        <div className="grid grid-cols-1 gap-4 xl:grid-cols-2">
          <TimeChart
            title="429 share: cohort vs control (%)"
            data={charts.points}
            markers={markers}
            csvName="rollout-429-share"
            unit="%"
            series={[
              { key: "cohortSharePct", label: "cohort 429 share", color: COHORT },
              { key: "controlSharePct", label: "control 429 share", color: CONTROL },
            ]}
          />
          <TimeChart
            title="Decisions per minute: cohort vs control"
            data={charts.points}
            markers={markers}
            csvName="rollout-decisions"
            series={[
              { key: "cohortDecisions", label: "cohort decisions", color: COHORT },
              { key: "controlDecisions", label: "control decisions", color: CONTROL },
            ]}
          />
          <TimeChart
            title="Guardrail margin: cohort 429 share minus control's (points)"
            data={charts.points}
            markers={markers}
            csvName="rollout-margin"
            unit=" pt"
            series={[
              { key: "marginPoints", label: "margin", color: "#dc2626" },
              { key: "maxMarginPoints", label: "guardrail (breach above)", color: "#f59e0b" },
            ]}
          />
          <TimeChart
            title="Decision latency p95, all tenants (recorded per decision server, not per cohort)"
            data={charts.points}
            markers={markers}
            csvName="rollout-latency"
            unit="ms"
            series={[
              { key: "allowP95Ms", label: "allow p95 (all tenants)", color: "#22c55e" },
              { key: "rejectP95Ms", label: "reject p95 (all tenants)", color: "#ef4444" },
            ]}
          />
        </div>
      )}
    </section>
  );
}
