"use client";
import { CartesianGrid, Legend, Line, LineChart, ReferenceLine, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { CsvButton } from "./csv-button";

export interface SeriesSpec {
  key: string;
  label: string;
  color: string;
  /** Plot on the right axis (e.g. a percentage next to counts). */
  right?: boolean;
}

function formatTick(ms: number, spanMs: number): string {
  const d = new Date(ms);
  if (spanMs <= 2 * 86_400_000) return d.toISOString().slice(11, 16);
  return d.toISOString().slice(5, 10);
}

/**
 * A time series chart with the policy versions (or a rollout's steps) drawn as vertical markers, and its data as CSV.
 * `t` is the bucket start in epoch ms (UTC).
 */
export function TimeChart({
  title,
  data,
  series,
  markers,
  unit,
  rightUnit,
  csvName,
  csvColumns,
  height = 220,
}: {
  title: string;
  data: ReadonlyArray<Record<string, number | null>>;
  series: readonly SeriesSpec[];
  /** Vertical markers: policy versions (`v3`), or anything else with its own `label`. */
  markers: ReadonlyArray<{ version: number; t: number; label?: string }>;
  unit?: string;
  rightUnit?: string;
  csvName: string;
  /** The CSV's columns after `t`, when it carries more than the lines drawn (default: the series' keys). */
  csvColumns?: readonly string[];
  height?: number;
}) {
  const first = (data[0]?.t as number | undefined) ?? 0;
  const last = (data[data.length - 1]?.t as number | undefined) ?? 0;
  const span = last - first;
  const hasRight = series.some((s) => s.right);
  return (
    <div className="card" data-testid={`chart-${csvName}`}>
      <div className="mb-2 flex items-center justify-between">
        <h3 className="text-sm font-semibold text-slate-800">{title}</h3>
        <CsvButton rows={data} columns={["t", ...(csvColumns ?? series.map((s) => s.key))]} filename={csvName} />
      </div>
      <ResponsiveContainer width="100%" height={height}>
        <LineChart data={data as Array<Record<string, number | null>>} margin={{ top: 8, right: 8, bottom: 0, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="#e2e8f0" />
          <XAxis dataKey="t" type="number" scale="time" domain={[first, last]} tickFormatter={(v: number) => formatTick(v, span)} fontSize={11} />
          <YAxis yAxisId="left" fontSize={11} unit={unit} width={56} />
          {hasRight && <YAxis yAxisId="right" orientation="right" fontSize={11} unit={rightUnit} width={48} />}
          <Tooltip labelFormatter={(v) => new Date(Number(v)).toISOString().replace("T", " ").slice(0, 16) + " UTC"} />
          <Legend wrapperStyle={{ fontSize: 12 }} />
          {markers.map((m) => (
            <ReferenceLine key={`${m.version}@${m.t}`} yAxisId="left" x={m.t} stroke="#7c3aed" strokeDasharray="4 2" label={{ value: m.label ?? `v${m.version}`, fontSize: 10, fill: "#7c3aed", position: "insideTopLeft" }} />
          ))}
          {series.map((s) => (
            <Line key={s.key} yAxisId={s.right ? "right" : "left"} type="monotone" dataKey={s.key} name={s.label} stroke={s.color} dot={false} isAnimationActive={false} connectNulls />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </div>
  );
}
