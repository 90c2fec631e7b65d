/**
 * The limit advisor: for a tier × operation × scope, how fast its subjects really go, and what a
 * proposed limit would have done to last month's traffic (docs/proving.md).
 *
 * - Peak rate of a subject: its most requests in one minute over the last 30 days. Minute rows are
 *   kept for ROLLUP_DOWNSAMPLE_AFTER_MS (7 days by default); older days have hour rows only, whose
 *   per-minute peak is known only to be at least the hour's count / 60: that lower bound is used
 *   for them, and the answer says how many days were seen by the minute.
 * - Per second: not recorded. A minute of n requests has a busiest second of at least ⌈n / 60⌉;
 *   the advisor shows that lower bound.
 * - Percentiles over subjects, nearest rank: the p-th percentile of N sorted values is the one at
 *   rank ⌈p/100 · N⌉.
 * - A proposed limit of L per second, minute or hour is judged per bucket as a fixed window
 *   would: the requests of a bucket past L (L·60 per minute for a per-second limit, spread evenly:
 *   a lower bound; hours: L·60 per hour for a per-minute limit on days before minute rows).
 *   It reports the share of the period's requests that would have been denied and how many
 *   subjects would have been denied at least once.
 * - Scope ip: client addresses are not recorded; the advisor says so.
 */
import type { Db } from "../../db/client";
import { oldestMinuteBucket, subjectStats, type AdvisorScope, type SubjectStats } from "../../db/justify-repo";
import { ServiceError } from "../errors";

export const ADVISOR_DAYS = 30;
export const PROPOSED_UNITS = ["second", "minute", "hour"] as const;
export type ProposedUnit = (typeof PROPOSED_UNITS)[number];

export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles of `values` (0s for an empty list). */
export function percentiles(values: readonly number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => (sorted.length === 0 ? 0 : sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!);
  return { p50: at(50), p95: at(95), p99: at(99), max: sorted.length === 0 ? 0 : sorted[sorted.length - 1]! };
}

export interface AdvisorQuery {
  tier: string;
  operation: string;
  scope: AdvisorScope | "ip";
  nowMs: number;
  proposed?: { limit: number; per: ProposedUnit } | null;
}

export interface AdvisorResult {
  query: AdvisorQuery;
  fromMs: number;
  toMs: number;
  /** Days (of the 30) seen by the minute; the rest by the hour. */
  minuteDays: number;
  subjects: number;
  requests: number;
  perMinute: Percentiles;
  /** Lower bounds: ⌈per-minute peak / 60⌉ per subject. */
  perSecondAtLeast: Percentiles;
  proposed: { limit: number; per: ProposedUnit; deniedRequests: number; deniedShare: number; subjectsDenied: number } | null;
  /** Subjects by peak, highest first (at most 20), for the table under the chart. */
  top: { subject: string; peakPerMinute: number; requests: number }[];
  notes: string[];
}

interface Combined {
  peakMinute: number;
  requests: number;
  over: number;
}

/** A span in the largest unit that keeps it readable: "25 minutes", "6.5 hours", "7.0 days". */
export function spanLabel(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  if (minutes < 120) return `${minutes} minute${minutes === 1 ? "" : "s"}`;
  if (ms < 2 * 86_400_000) return `${(ms / 3_600_000).toFixed(1)} hours`;
  return `${(ms / 86_400_000).toFixed(1)} days`;
}

/** Merges minute-row and hour-row stats per subject (hours give per-minute lower bounds). */
export function combineSubjectStats(minutes: readonly SubjectStats[], hours: readonly SubjectStats[]): Map<string, Combined> {
  const out = new Map<string, Combined>();
  for (const s of minutes) out.set(s.subject, { peakMinute: s.peak, requests: s.requests, over: s.over });
  for (const s of hours) {
    const c = out.get(s.subject) ?? { peakMinute: 0, requests: 0, over: 0 };
    c.peakMinute = Math.max(c.peakMinute, Math.ceil(s.peak / 60));
    c.requests += s.requests;
    c.over += s.over;
    out.set(s.subject, c);
  }
  return out;
}

export async function adviseLimit(db: Db, q: AdvisorQuery): Promise<AdvisorResult> {
  const toMs = Math.floor(q.nowMs / 60_000) * 60_000;
  const fromMs = toMs - ADVISOR_DAYS * 86_400_000;
  const empty = percentiles([]);
  if (q.scope === "ip") {
    return {
      query: q, fromMs, toMs, minuteDays: 0, subjects: 0, requests: 0, perMinute: empty, perSecondAtLeast: empty, proposed: null, top: [],
      notes: ["Client addresses are not recorded, so per-address rates are not known. Size an ip limit from the per-key or per-tenant rates of the clients behind one address."],
    };
  }
  if (q.proposed && !(Number.isInteger(q.proposed.limit) && q.proposed.limit >= 1)) {
    throw new ServiceError("invalid_request", "proposed limit: expected a whole number ≥ 1", { field: "limit" });
  }
  // Minute rows where they exist (the most recent days), hour rows before them. They split at the
  // start of the oldest minute's hour: downsampling deletes minute rows by whole hours, so every
  // minute of that hour is still there (or never had traffic). Rounding up instead threw away the
  // first hour's minutes — all of them when traffic began less than an hour ago, which left only
  // hour rows, whose count / 60 cannot show a per-minute limit denying anything.
  const oldestMinute = await oldestMinuteBucket(db, fromMs);
  const minuteFrom = oldestMinute === null ? toMs : Math.max(fromMs, Math.floor(oldestMinute / 3_600_000) * 3_600_000);
  const per = q.proposed?.per;
  const limit = q.proposed?.limit ?? null;
  const perMinuteLimit = limit === null ? null : per === "second" ? limit * 60 : per === "minute" ? limit : null;
  const base = { tier: q.tier, operation: q.operation, scope: q.scope };
  // A per-hour limit is judged on hour buckets over the whole period.
  const minutes =
    per === "hour"
      ? []
      : await subjectStats(db, { ...base, fromMs: minuteFrom, toMs, granularity: "minute", limitPerBucket: perMinuteLimit });
  const hourLimit = limit === null ? null : per === "hour" ? limit : perMinuteLimit! * 60;
  const hours = await subjectStats(db, { ...base, fromMs, toMs: per === "hour" ? toMs : minuteFrom, granularity: "hour", limitPerBucket: hourLimit });
  // With a per-hour limit, minute peaks still come from the minute rows.
  const peaks = per === "hour" ? await subjectStats(db, { ...base, fromMs: minuteFrom, toMs, granularity: "minute", limitPerBucket: null }) : minutes;
  const combined = per === "hour" ? mergeHourLimit(peaks, hours) : combineSubjectStats(minutes, hours);
  const values = [...combined.values()];
  const requests = values.reduce((s, c) => s + c.requests, 0);
  const over = values.reduce((s, c) => s + c.over, 0);
  const notes: string[] = [];
  const minuteDays = (toMs - minuteFrom) / 86_400_000;
  if (minuteDays < ADVISOR_DAYS) {
    notes.push(
      oldestMinute === null
        ? "No minute rows in the last 30 days: per-minute peaks are lower bounds (an hour's count / 60)."
        : `Minute rows cover the last ${spanLabel(toMs - minuteFrom)}; for the time before, per-minute peaks are lower bounds (an hour's count / 60).`,
    );
  }
  if (q.scope === "api_key" && q.operation !== "*") notes.push("Per-key counts of one operation are estimated: key rows count all operations, split here in the proportions of the tenant's operations in each minute.");
  notes.push("Per-second rates are not recorded: the per-second figures are lower bounds (a minute's requests spread evenly).");
  if (per === "second") notes.push("A per-second limit is judged per minute as 60 × the limit (as if each minute's requests were spread evenly): the true denials are at least these.");
  return {
    query: q,
    fromMs,
    toMs,
    minuteDays,
    subjects: combined.size,
    requests,
    perMinute: percentiles(values.map((c) => c.peakMinute)),
    perSecondAtLeast: percentiles(values.map((c) => Math.ceil(c.peakMinute / 60))),
    proposed:
      q.proposed && limit !== null
        ? { limit, per: q.proposed.per, deniedRequests: over, deniedShare: requests > 0 ? over / requests : 0, subjectsDenied: values.filter((c) => c.over > 0).length }
        : null,
    top: [...combined]
      .map(([subject, c]) => ({ subject, peakPerMinute: c.peakMinute, requests: c.requests }))
      .sort((a, b) => b.peakPerMinute - a.peakPerMinute || a.subject.localeCompare(b.subject))
      .slice(0, 20),
    notes,
  };
}

/** Per-hour limit: denials from hour rows over the whole period; peaks from minutes, hours before them. */
function mergeHourLimit(minutePeaks: readonly SubjectStats[], hours: readonly SubjectStats[]): Map<string, Combined> {
  const out = new Map<string, Combined>();
  for (const s of hours) out.set(s.subject, { peakMinute: Math.ceil(s.peak / 60), requests: s.requests, over: s.over });
  for (const s of minutePeaks) {
    const c = out.get(s.subject) ?? { peakMinute: 0, requests: s.requests, over: 0 };
    c.peakMinute = Math.max(c.peakMinute, s.peak);
    out.set(s.subject, c);
  }
  return out;
}
