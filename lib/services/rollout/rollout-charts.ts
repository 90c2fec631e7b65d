/**
 * The Policy page's cohort-against-control charts (docs/control-plane.md#cohort-against-control-charts):
 * per minute of a rollout, from its start to its end (or the last finished minute while it runs),
 * the cohort's and the control's decisions and 429 share, and the guardrail's margin — computed by
 * the guard's own comparison (compareCohort) with the cohort of the step that ran in that minute —
 * and the decision latency of that minute.
 *
 * Latency is recorded per decision server, not per tenant or version (lib/redis/usage-format.ts
 * `l|`): it is drawn for all tenants together and labelled so; there is no cohort latency to show.
 */
import type { Db } from "../../db/client";
import { findActiveRollout, findLatestRollout, type RolloutRecord } from "../../db/rollout-repo";
import { minuteUsageByGroup } from "../../db/rollout-usage-repo";
import { latencyHistograms } from "../../db/usage-repo";
import { compareCohort } from "./compare-cohort";
import { cohortMembers } from "../../policy/rollout";
import { histogramQuantile } from "../observe/usage-dashboard";
import { candidateTenants } from "./rollout-view";

const MINUTE_MS = 60_000;
/** The charts show at most the rollout's last this many minutes. */
export const CHART_MAX_MINUTES = 360;

export type RolloutChartPoint = {
  /** The minute's start (epoch ms, UTC). */
  t: number;
  /** 1-based step that ran in the minute. */
  step: number;
  cohortDecisions: number;
  controlDecisions: number;
  /** 429 share (%), 429s only as the dashboards count them; null without decisions. */
  cohortSharePct: number | null;
  controlSharePct: number | null;
  /** cohort − control 429 share (points); null when either side had no decisions. */
  marginPoints: number | null;
  /** The guardrail: the margin may not exceed this. */
  maxMarginPoints: number;
  /** All tenants' decision latency (ms), p95 of those that passed and of those denied. */
  allowP95Ms: number | null;
  rejectP95Ms: number | null;
};

export interface RolloutCharts {
  rollout: string;
  state: RolloutRecord["state"];
  fromMs: number;
  toMs: number;
  /** Earlier minutes of a long rollout were left out (CHART_MAX_MINUTES). */
  truncated: boolean;
  points: RolloutChartPoint[];
  /** Where each step began, for markers. */
  steps: { step: number; t: number }[];
}

/** When each step began: the recorded starts, or (rows from before they were recorded) the start and the current step's. */
export function stepStartsOf(r: Pick<RolloutRecord, "createdAt" | "step" | "stepStartedAt" | "stepStarts">): number[] {
  if (r.stepStarts.length > 0) return r.stepStarts.map((d) => d.getTime());
  const starts = [r.createdAt.getTime()];
  for (let k = 1; k <= r.step; k++) starts.push(r.stepStartedAt.getTime());
  return starts;
}

/** Each tenant's first step in the cohort (the cohort only grows from step to step); tenants never in it are left out. */
export function entryStepOf(r: Pick<RolloutRecord, "id" | "canaries" | "steps" | "candidate">): Map<string, number> {
  const universe = candidateTenants(r);
  const entry = new Map<string, number>();
  r.steps.forEach((s, k) => {
    for (const t of cohortMembers({ salt: r.id, canaries: r.canaries, percent: s.percent }, universe)) if (!entry.has(t)) entry.set(t, k);
  });
  return entry;
}

/** The step that ran in the minute starting at `minuteMs`: a step counts from the minute it began in, as the guard judges it. */
export function stepAt(starts: readonly number[], minuteMs: number): number {
  let step = 0;
  starts.forEach((s, k) => {
    if (Math.floor(s / MINUTE_MS) * MINUTE_MS <= minuteMs) step = k;
  });
  return step;
}

const pct = (part: number, all: number) => (all > 0 ? Math.round((part / all) * 1000) / 10 : null);

/** The charts of one rollout up to `nowMs` (the running minute left out, as on the Dashboards). */
export async function rolloutCharts(db: Db, r: RolloutRecord, { nowMs }: { nowMs: number }): Promise<RolloutCharts> {
  const starts = stepStartsOf(r);
  const endMs = Math.min(r.endedAt ? r.endedAt.getTime() + MINUTE_MS : Infinity, Math.floor(nowMs / MINUTE_MS) * MINUTE_MS);
  const toMs = Math.floor(endMs / MINUTE_MS) * MINUTE_MS;
  const firstMs = Math.floor(starts[0]! / MINUTE_MS) * MINUTE_MS;
  const fromMs = Math.max(firstMs, toMs - CHART_MAX_MINUTES * MINUTE_MS);
  const [rows, latency] = toMs > fromMs ? await Promise.all([minuteUsageByGroup(db, { fromMs, toMs, groupOf: entryStepOf(r) }), latencyHistograms(db, { fromMs, toMs, granularity: "minute" })]) : [[], new Map()];
  const byMinute = new Map<number, typeof rows>();
  for (const row of rows) byMinute.set(row.minuteMs, [...(byMinute.get(row.minuteMs) ?? []), row]);
  const g = r.guardrails;
  const points: RolloutChartPoint[] = [];
  for (let t = fromMs; t < toMs; t += MINUTE_MS) {
    const step = stepAt(starts, t);
    // The groups are the guard's tenants here: group k joined the cohort at step k, -1 never did.
    const minuteRows = (byMinute.get(t) ?? []).map((x) => ({ tenant: String(x.group), operation: x.operation, total: x.total, denied: x.denied, denied429: x.denied429 }));
    const cohort = new Set(Array.from({ length: step + 1 }, (_, k) => String(k)));
    const cmp = compareCohort(minuteRows, cohort, g.maxDenyShareIncrease, g.minDecisions);
    const h = latency.get(t);
    points.push({
      t,
      step: step + 1,
      cohortDecisions: cmp.cohort.decisions,
      controlDecisions: cmp.control.decisions,
      cohortSharePct: pct(cmp.cohort.denied429, cmp.cohort.decisions),
      controlSharePct: pct(cmp.control.denied429, cmp.control.decisions),
      marginPoints: cmp.cohort.decisions > 0 && cmp.control.decisions > 0 ? Math.round(cmp.marginPoints * 10) / 10 : null,
      maxMarginPoints: g.maxDenyShareIncrease,
      allowP95Ms: h ? histogramQuantile(h.allowed, 0.95) : null,
      rejectP95Ms: h ? histogramQuantile(h.denied, 0.95) : null,
    });
  }
  return {
    rollout: r.id,
    state: r.state,
    fromMs,
    toMs,
    truncated: fromMs > firstMs,
    points,
    steps: starts.map((s, k) => ({ step: k + 1, t: Math.floor(s / MINUTE_MS) * MINUTE_MS })).filter((s) => s.t >= fromMs && s.t < toMs),
  };
}

/** How long the Policy page keeps showing an ended rollout's charts. */
export const CHARTS_AFTER_END_MS = 86_400_000;

/** The charts of the running or paused rollout, else of the latest one if it ended within a day; otherwise null. `nowMs` defaults to the clock (pages are adapters; tests pass a time). */
export async function latestRolloutCharts(db: Db, { nowMs = Date.now() }: { nowMs?: number } = {}): Promise<RolloutCharts | null> {
  const r = (await findActiveRollout(db)) ?? (await findLatestRollout(db));
  if (!r || (r.endedAt && nowMs - r.endedAt.getTime() > CHARTS_AFTER_END_MS)) return null;
  return rolloutCharts(db, r, { nowMs });
}
