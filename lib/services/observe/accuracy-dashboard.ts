/**
 * "Approximation vs exact log" per limit for the dashboards' range: the accuracy meter's counts
 * (lib/services/justify/accuracy-report.ts) over the same window and granularity the other panels use.
 */
import type { Db } from "../../db/client";
import { accuracyByLimit, type AccuracyRow } from "../justify/accuracy-report";
import { DASHBOARD_RANGES, type DashboardRange } from "./usage-dashboard";

const SIZE_MS = { minute: 60_000, hour: 3_600_000 } as const;

export async function accuracyForRange(
  db: Db,
  range: DashboardRange,
  nowMs: number = Date.now(),
  custom?: { fromMs: number; toMs: number },
): Promise<{ fromMs: number; toMs: number; rows: AccuracyRow[] }> {
  if (custom) {
    const g = custom.toMs - custom.fromMs <= 6 * 3_600_000 ? "minute" : "hour";
    return { ...custom, rows: await accuracyByLimit(db, { ...custom, granularity: g }) };
  }
  const { ms, granularity } = DASHBOARD_RANGES[range];
  const g = granularity === "minute" ? "minute" : "hour";
  const toMs = Math.floor(nowMs / SIZE_MS[g]) * SIZE_MS[g] + SIZE_MS[g];
  const fromMs = toMs - ms;
  return { fromMs, toMs, rows: await accuracyByLimit(db, { fromMs, toMs, granularity: g }) };
}
