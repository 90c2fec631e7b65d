/**
 * Everything the SRE dashboards draw, for all tenants or one, over 5 min / 15 min / 1 h / 24 h /
 * 7 d / 30 d, as plain serialisable numbers (the charts are client leaves; the data is fetched on
 * the server).
 *
 * The minute that is still running is left out of every series: decision servers flush a minute's
 * aggregates only when it ends, so drawing it would show a drop to zero at the right edge of every
 * chart. Hourly ranges end with the current hour drawn from its finished minutes only, marked
 * `partial` (its requests per second are over those minutes).
 */
import { z } from "zod";
import type { Db } from "../../db/client";
import {
  errorSeries,
  latencyHistograms,
  policyMarkers,
  requestsByTier,
  topConsumers,
  usageSeries,
  GRANULARITY_MS,
  type Granularity,
  type TopKey,
  type TopTenant,
} from "../../db/usage-repo";
import { denialsByReason, sumDenials } from "../../db/denial-repo";
import { listAlerts } from "../../db/alert-repo";
import { count429, emptyDenials, type DenialsByReason } from "../../policy/denial-reasons";
import { LATENCY_BUCKETS_MS } from "../../redis/usage-format";
import { getQuotas, type QuotaBurn } from "./usage-query";

export const DASHBOARD_RANGES = {
  "5m": { ms: 5 * 60_000, granularity: "minute" },
  "15m": { ms: 15 * 60_000, granularity: "minute" },
  "1h": { ms: 3_600_000, granularity: "minute" },
  "24h": { ms: 86_400_000, granularity: "hour" },
  "7d": { ms: 7 * 86_400_000, granularity: "hour" },
  "30d": { ms: 30 * 86_400_000, granularity: "hour" },
} as const satisfies Record<string, { ms: number; granularity: Granularity }>;
export type DashboardRange = keyof typeof DASHBOARD_RANGES;
export const DEFAULT_DASHBOARD_RANGE: DashboardRange = "24h";
const RANGE_NAMES = Object.keys(DASHBOARD_RANGES) as [DashboardRange, ...DashboardRange[]];
/** `?range=`: absent means 24h; anything else must be one of the ranges (an error names them). */
export const dashboardRangeSchema = z
  .enum(RANGE_NAMES, { error: () => `range must be one of ${RANGE_NAMES.join(", ")}` })
  .default(DEFAULT_DASHBOARD_RANGE);

/** The page's `?range=` value parsed: the range, or the message to show instead of the charts. */
export function parseDashboardRange(value: string | string[] | undefined): { ok: true; range: DashboardRange } | { ok: false; message: string; value: string } {
  const raw = Array.isArray(value) ? value.join(",") : value;
  const parsed = dashboardRangeSchema.safeParse(raw === "" ? undefined : raw);
  return parsed.success ? { ok: true, range: parsed.data } : { ok: false, message: parsed.error.issues[0]!.message, value: String(raw) };
}

/** A custom range: at most this long. */
export const MAX_CUSTOM_RANGE_MS = 90 * 86_400_000;
/** A time without a zone (a datetime-local input) is UTC. */
const utcMs = (v: string) => Date.parse(/(Z|[+-]\d{2}:\d{2})$/.test(v) ? v : `${v}Z`);
/** `YYYY-MM-DDTHH:MM` (a datetime-local input, read as UTC) or a full ISO 8601 time. */
const customTime = z.string().refine((v) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$/.test(v) && Number.isFinite(utcMs(v)), {
  message: "expected a UTC time like 2026-12-05T09:30",
});

/** The buckets a custom range is drawn in: minutes up to 6 hours, hours up to 14 days, days beyond. */
export function granularityForSpan(ms: number): Granularity {
  return ms <= 6 * 3_600_000 ? "minute" : ms <= 14 * 86_400_000 ? "hour" : "day";
}

/**
 * `?from=&to=` of the dashboards: a custom range (UTC), or the message to show instead of the charts
 * (naming the field). `to` may not be in the future; the range is at most 90 days.
 */
export function parseCustomRange(from: string, to: string, nowMs: number): { ok: true; fromMs: number; toMs: number } | { ok: false; message: string; value: string } {
  const parsed = z.object({ from: customTime, to: customTime }).safeParse({ from, to });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, message: `${String(issue.path[0])}: ${issue.message}`, value: `${from} – ${to}` };
  }
  const fromMs = utcMs(from);
  const toMs = utcMs(to);
  const value = `${from} – ${to}`;
  if (toMs <= fromMs) return { ok: false, message: "to: must be after from", value };
  if (toMs - fromMs > MAX_CUSTOM_RANGE_MS) return { ok: false, message: "to: a custom range is at most 90 days", value };
  if (fromMs >= nowMs) return { ok: false, message: "from: must be in the past", value };
  return { ok: true, fromMs, toMs: Math.min(toMs, nowMs) };
}

export interface DashboardData {
  /** A named range, or "custom" (`?from=&to=`). */
  range: DashboardRange | "custom";
  granularity: Granularity;
  fromMs: number;
  toMs: number;
  tenant: string | null;
  /**
   * Per bucket: decisions by outcome, the denials by status (429 = the limit reasons, 401 unknown
   * or missing key, 403 tenant suspended, 503 store unavailable, and those recorded before reasons
   * were), every reason of the decision API as its own column (the CSV), and the 429 share (%).
   */
  decisions: Array<DecisionsPoint>;
  rpsByTier: { tiers: string[]; points: Array<Record<string, number>> };
  latency: Array<{ t: number; allowP50: number | null; allowP95: number | null; allowP99: number | null; rejectP50: number | null; rejectP95: number | null; rejectP99: number | null }>;
  errors: Array<{ t: number; redisError: number; redisTimeout: number; breakerOpen: number; degraded: number }>;
  topByRequests: { tenants: TopTenant[]; keys: LabelledKey[] };
  topByDenied: { tenants: TopTenant[]; keys: LabelledKey[] };
  quotas: QuotaBurn[];
  markers: Array<{ version: number; t: number }>;
  alerts: Array<{ id: string; kind: string; subject: string; message: string; startedAt: number; resolvedAt: number | null; policyVersion: number | null; webhookStatus: string | null }>;
  /** `share429Pct`: 429s / decisions; `denySharePct`: every denial / decisions; `byReason`: the denials by reason. */
  totals: { decisions: number; denied: number; denySharePct: number; share429Pct: number; byReason: DenialsByReason };
  /** The last bucket holds only the finished minutes of the current hour (hourly ranges). */
  partial: { t: number; minutes: number } | null;
}

export type DecisionsPoint = {
  t: number;
  allowed: number;
  denied: number;
  shadowDenied: number;
  degraded: number;
  denied429: number;
  denied401: number;
  denied403: number;
  denied503: number;
  share429Pct: number;
} & DenialsByReason;

const pct1 = (part: number, all: number) => (all ? Math.round((part / all) * 1000) / 10 : 0);

/**
 * A top key with the label people know it by: usage is recorded under the first 12 hex characters
 * of the key's SHA-256 (the decision path never sees more), shown as the key's display prefix
 * (`sk_test_acme…`, as on the tenant page) and name; a key no longer stored keeps its hash.
 */
export type LabelledKey = TopKey & { label: string; name: string | null };

async function labelKeys(db: Db, keys: readonly TopKey[]): Promise<LabelledKey[]> {
  const wanted = keys.filter((k) => k.keyPrefix !== "_");
  const found = wanted.length
    ? await db.apiKey.findMany({
        where: { OR: wanted.map((k) => ({ hash: { startsWith: k.keyPrefix }, tenant: { slug: k.tenant } })) },
        select: { hash: true, prefix: true, name: true, tenant: { select: { slug: true } } },
      })
    : [];
  return keys.map((k) => {
    const key = found.find((f) => f.tenant.slug === k.tenant && f.hash.startsWith(k.keyPrefix));
    return { ...k, label: key ? `${key.prefix}…` : k.keyPrefix === "_" ? "no key" : `hash ${k.keyPrefix}… (key deleted)`, name: key?.name ?? null };
  });
}

/** The bucket's upper bound (ms) where the cumulative count reaches quantile q; null when empty. */
export function histogramQuantile(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((s, c) => s + (c ?? 0), 0);
  if (total === 0) return null;
  const rank = q * total;
  let cum = 0;
  for (let i = 0; i <= LATENCY_BUCKETS_MS.length; i++) {
    cum += counts[i] ?? 0;
    if (cum >= rank) return i < LATENCY_BUCKETS_MS.length ? LATENCY_BUCKETS_MS[i]! : LATENCY_BUCKETS_MS[LATENCY_BUCKETS_MS.length - 1]! * 2;
  }
  return LATENCY_BUCKETS_MS[LATENCY_BUCKETS_MS.length - 1]! * 2;
}

/** `nowMs` defaults to the clock: pages are adapters, tests pass a fixed time. */
export async function loadDashboard(
  db: Db,
  { range, tenant, nowMs = Date.now(), custom }: { range: DashboardRange; tenant?: string; nowMs?: number; custom?: { fromMs: number; toMs: number } },
): Promise<DashboardData> {
  const granularity = custom ? granularityForSpan(custom.toMs - custom.fromMs) : DASHBOARD_RANGES[range].granularity;
  const ms = custom ? custom.toMs - custom.fromMs : DASHBOARD_RANGES[range].ms;
  const size = GRANULARITY_MS[granularity];
  // Data ends where the running minute starts; buckets stay aligned to the granularity.
  const finishedMs = Math.min(Math.floor(nowMs / 60_000) * 60_000, custom ? Math.floor(custom.toMs / 60_000) * 60_000 : Infinity);
  const lastBucket = Math.floor((finishedMs - 1) / size) * size;
  const toMs = finishedMs;
  const fromMs = custom ? Math.floor(custom.fromMs / size) * size : lastBucket + size - ms;
  const partialMinutes = (finishedMs - lastBucket) / 60_000;
  const partial = partialMinutes < size / 60_000 ? { t: lastBucket, minutes: partialMinutes } : null;
  const f = { fromMs, toMs, granularity };
  const month = new Date(nowMs).toISOString().slice(0, 7);
  const series = await usageSeries(db, { ...f, tenant });
  const deniedAt = new Map(series.map((p) => [p.bucketStartMs, p.denied]));
  const [reasons, tiers, hist, errors, topR, topD, quotas, markers, alerts] = await Promise.all([
    denialsByReason(db, { ...f, tenant }, (t) => deniedAt.get(t) ?? 0),
    requestsByTier(db, f),
    latencyHistograms(db, f),
    errorSeries(db, f),
    topConsumers(db, { fromMs, toMs, by: "requests", limit: 10, tenant }),
    topConsumers(db, { fromMs, toMs, by: "denied", limit: 10, tenant }),
    getQuotas(db, { period: month, tenant, nowMs }),
    policyMarkers(db, { fromMs, toMs }),
    listAlerts(db, { sinceMs: fromMs, limit: 50 }),
  ]);
  let total = 0;
  let denied = 0;
  const decisions = series.map((p): DecisionsPoint => {
    const all = p.allowed + p.denied + p.shadowDenied + p.degraded;
    total += all;
    denied += p.denied;
    const r = reasons.get(p.bucketStartMs) ?? emptyDenials();
    const n429 = count429(r);
    return {
      t: p.bucketStartMs,
      allowed: p.allowed,
      denied: p.denied,
      shadowDenied: p.shadowDenied,
      degraded: p.degraded,
      denied429: n429,
      denied401: r.unknown_key,
      denied403: r.tenant_suspended,
      denied503: r.store_unavailable,
      share429Pct: pct1(n429, all),
      ...r,
    };
  });
  const byReason = sumDenials(reasons.values());
  const secondsOf = (t: number) => (partial && t === partial.t ? partial.minutes * 60 : size / 1000);
  return {
    range: custom ? "custom" : range,
    granularity,
    fromMs,
    toMs,
    tenant: tenant ?? null,
    decisions,
    rpsByTier: {
      tiers: tiers.tiers,
      points: tiers.points.map((p) => {
        const out: Record<string, number> = { t: p.bucketStartMs };
        for (const t of tiers.tiers) out[t] = Math.round(((p[t] ?? 0) / secondsOf(p.bucketStartMs)) * 1000) / 1000;
        return out;
      }),
    },
    latency: [...hist.entries()].map(([t, h]) => ({
      t,
      allowP50: histogramQuantile(h.allowed, 0.5),
      allowP95: histogramQuantile(h.allowed, 0.95),
      allowP99: histogramQuantile(h.allowed, 0.99),
      rejectP50: histogramQuantile(h.denied, 0.5),
      rejectP95: histogramQuantile(h.denied, 0.95),
      rejectP99: histogramQuantile(h.denied, 0.99),
    })),
    errors: errors.map((e) => ({ t: e.bucketStartMs, redisError: e.redisError, redisTimeout: e.redisTimeout, breakerOpen: e.breakerOpen, degraded: e.degraded })),
    topByRequests: { tenants: topR.tenants, keys: await labelKeys(db, topR.keys) },
    topByDenied: { tenants: topD.tenants, keys: await labelKeys(db, topD.keys) },
    quotas: quotas.quotas.slice(0, 50),
    markers: markers.map((m) => ({ version: m.version, t: Math.floor(m.atMs / size) * size })),
    alerts: alerts
      .filter((a) => !tenant || a.subject === `tenant:${tenant}` || a.subject.startsWith(`${tenant}/`))
      .map((a) => ({ id: a.id, kind: a.kind, subject: a.subject, message: a.message, startedAt: a.startedAt.getTime(), resolvedAt: a.resolvedAt?.getTime() ?? null, policyVersion: a.policyVersion, webhookStatus: a.webhookStatus })),
    totals: { decisions: total, denied, denySharePct: pct1(denied, total), share429Pct: pct1(count429(byReason), total), byReason },
    partial,
  };
}
