/**
 * Renders a billing statement as CSV (RFC 4180), JSON or a CloudEvents JSON batch. Pure and
 * deterministic: the same statement always renders to the same bytes (fixed column and key order,
 * rows pre-sorted by tenant then quota, integers only, no timestamps of the export itself).
 *
 * CSV columns, in order (header row first, CRLF line ends, fields quoted when they contain a comma,
 * quote, CR or LF; quotes doubled):
 *   period         YYYY-MM (UTC calendar month)
 *   status         provisional (month still open) | final (closed)
 *   line_type      usage | adjustment (late usage recorded after the close)
 *   revision       0 for usage lines; the adjustment batch number (1, 2, …) for adjustments
 *   tenant         tenant slug
 *   tenant_name    tenant name
 *   tier           the tier whose quota this is
 *   tier_history   tiers during the month with dates: `free:2026-11-01..2026-11-14;pro:2026-11-15..2026-11-30`
 *   quota_id       stable quota id (from the compiled policy)
 *   operation      the operation the quota covers (`*` = all)
 *   quota_period   month | day
 *   limit          included units per quota period
 *   overage_policy block | bill
 *   used           units of the requests that passed and counted against the quota (allowed + shadow-denied
 *                  + degraded), each request its cost (the units the decision servers enforce)
 *   overage_units  units above the limit, summed per quota period; 0 unless overage_policy = bill
 *   denied         requests denied BY this quota (429 quota_exhausted, or a cost above the quota's limit);
 *                  denials by rate limits, concurrency, global caps, 401 and 403 are not counted.
 *                  Lines frozen before quota denials were recorded (migration 20261202170000) keep the
 *                  figure they were closed with: denials for any reason on the quota's operations.
 *   period_label, period_start, period_end, period_start_at, period_end_at, time_zone
 *                  only in a month with a tenant on its own billing period (so every other month keeps
 *                  its bytes): that tenant's period (lib/policy/billing-month.ts), empty on the lines of
 *                  tenants on the UTC calendar month
 *   tenant_override only in a month with a tenant override (so every other month keeps its bytes):
 *                  true when the line's quota is the tenant's own override of its tier's quota (same
 *                  quota_id, its own limit) at some moment of the month, else false
 *
 * Which tenant × quota lines a month has: lib/services/billing/billing-statement.ts.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { METER_CONTENT_TYPES, METER_FORMATS, METER_RENDERERS } from "./billing-meter-formats";
import type { Statement, StatementLine, TierSpanOut } from "./statement";

// The billing systems' event formats (OpenMeter, Lago, Orb) live in ./billing-meter-formats.ts.
export const BILLING_FORMATS = ["csv", "json", "cloudevents", ...METER_FORMATS] as const;
export type BillingFormat = (typeof BILLING_FORMATS)[number];

/**
 * What every column means and its unit: shown on the Billing page, carried inside the JSON and
 * CloudEvents exports (`dictionary`), and served as its own CSV for the CSV export
 * (`format=dictionary`, linked from the CSV answer's `Link: …; rel="describedby"`), so a CSV stays
 * a plain table every spreadsheet reads.
 */
/** GET /api/v1/billing/dictionary's query (the route and the OpenAPI document share it). */
export const billingDictionaryQuerySchema = z.strictObject({ format: z.enum(["csv", "json"]).default("csv") });

export const BILLING_DICTIONARY: ReadonlyArray<{ column: (typeof CSV_COLUMNS)[number] | (typeof PERIOD_COLUMNS)[number] | typeof OVERRIDE_COLUMN; json: string; unit: string; meaning: string }> = [
  { column: "period", json: "period", unit: "UTC calendar month", meaning: "The billing month, YYYY-MM." },
  { column: "status", json: "status", unit: "—", meaning: "provisional while the month is open (figures still grow as usage is drained, about every minute); final once the worker has closed it, BILLING_GRACE_MS (default 1 h) after the month ended. A final month exports the same bytes every time." },
  { column: "line_type", json: "(lines / adjustments)", unit: "—", meaning: "usage: the month's figures; adjustment: usage drained after the close, added as its own line (the frozen usage lines never change)." },
  { column: "revision", json: "revision", unit: "count", meaning: "0 for usage lines; the adjustment batch number (1, 2, …) for adjustments." },
  { column: "tenant", json: "tenant", unit: "—", meaning: "The tenant's slug." },
  { column: "tenant_name", json: "tenantName", unit: "—", meaning: "The tenant's name (from the last policy version that had it, for a deleted tenant)." },
  { column: "tier", json: "tier", unit: "—", meaning: "The tier whose quota this line is." },
  { column: "tier_history", json: "tierHistory", unit: "UTC dates", meaning: "The tenant's tiers during the month with their dates, e.g. free:2026-11-01..2026-11-14;pro:2026-11-15..2026-11-30." },
  { column: "quota_id", json: "quotaId", unit: "—", meaning: "The quota's stable id in the compiled policy (a tenant's override of a tier quota keeps the tier quota's id). The Billing page names it: operation, limit and period." },
  { column: "operation", json: "operation", unit: "—", meaning: "The operation the quota covers; * means every operation." },
  { column: "quota_period", json: "quotaPeriod", unit: "—", meaning: "month: one allowance for the month; day: one allowance per UTC day, so used and overage_units are the sums over the month's days." },
  { column: "limit", json: "limit", unit: "units per quota period", meaning: "Included units per quota period (per month, or per UTC day). A request takes its cost in units: 1, unless its operation (cost in the policy) or the request itself sets more." },
  { column: "overage_policy", json: "overagePolicy", unit: "—", meaning: "block: requests over the limit are denied (429); bill: they pass and count as overage." },
  { column: "used", json: "used", unit: "units", meaning: "Units of the requests that passed and counted against the quota (allowed, shadow-denied and degraded, i.e. passed while Redis was unavailable), each its cost: the same units the decision servers count to enforce the quota." },
  { column: "overage_units", json: "overageUnits", unit: "units", meaning: "Units above the limit, summed per quota period; 0 unless overage_policy is bill." },
  { column: "denied", json: "denied", unit: "requests", meaning: "Requests denied BY THIS QUOTA only (429 quota_exhausted, or a cost above its limit). Denials by rate limits, concurrency limits, global caps, unknown keys (401) and suspended tenants (403) are not counted here." },
  { column: "period_label", json: "billingPeriod.label", unit: "—", meaning: "Only in a month with a tenant on its own billing period (empty on the other lines): the period's label, e.g. 2026-11-15@America/Los_Angeles. A month holds, for such a tenant, each of its periods whose last local day falls in the month; a billing change can end one period and start another, so a tenant may have two lines per quota." },
  { column: "period_start", json: "billingPeriod.start", unit: "local date", meaning: "The period's first day, in its time zone (YYYY-MM-DD)." },
  { column: "period_end", json: "billingPeriod.end", unit: "local date", meaning: "The period's last day, in its time zone (YYYY-MM-DD, inclusive)." },
  { column: "period_start_at", json: "billingPeriod.startAt", unit: "ISO 8601 UTC", meaning: "The instant the period starts (local midnight of period_start, or the billing change)." },
  { column: "period_end_at", json: "billingPeriod.endAt", unit: "ISO 8601 UTC", meaning: "The instant the period ends (exclusive): local midnight after period_end, or a billing change." },
  { column: "time_zone", json: "billingPeriod.timeZone", unit: "IANA name", meaning: "The period's time zone; used, limit and overage_units are of this period (a day quota: the sum over its local days)." },
  { column: "tenant_override", json: "tenantOverride", unit: "true | false", meaning: "Only in a month where some tenant had its own override of a tier quota (the last column; absent otherwise): true when the line's quota is the tenant's override (the same quota_id with its own limit or overage) at some moment of the month, the limit being the override's; else false. JSON carries tenantOverride: true on those lines only." },
];

export const CSV_COLUMNS = [
  "period", "status", "line_type", "revision", "tenant", "tenant_name", "tier", "tier_history", "quota_id",
  "operation", "quota_period", "limit", "overage_policy", "used", "overage_units", "denied",
] as const;
/** Present only when some line of the export is of a tenant's own billing period (after `denied`). */
export const PERIOD_COLUMNS = ["period_label", "period_start", "period_end", "period_start_at", "period_end_at", "time_zone"] as const;
/** The last column, present only when some line of the export is a tenant's override. */
export const OVERRIDE_COLUMN = "tenant_override";

export function csvField(value: string | number): string {
  const s = String(value);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

export function formatTierHistory(spans: TierSpanOut[]): string {
  return spans.map((s) => `${s.tier}:${s.from}..${s.to}`).join(";");
}

function csvRow(s: Statement, type: "usage" | "adjustment", revision: number, l: StatementLine, marked: boolean, periods: boolean): string {
  const row: (string | number)[] = [
    s.period, s.status, type, revision, l.tenant, l.tenantName, l.tier, formatTierHistory(l.tierHistory), l.quotaId,
    l.operation, l.quotaPeriod, l.limit, l.overage, l.used, l.overageUnits, l.denied,
  ];
  if (periods) {
    const p = l.billingPeriod;
    row.push(...(p ? [p.label, p.start, p.end, p.startAt, p.endAt, p.timeZone] : ["", "", "", "", "", ""]));
  }
  if (marked) row.push(l.tenantOverride ? "true" : "false");
  return row.map(csvField).join(",");
}

/** Whether the export marks overrides: only a month that has one, so every other month keeps its bytes. */
export function hasOverrides(s: Statement): boolean {
  return s.lines.some((l) => l.tenantOverride) || s.adjustments.some((a) => a.tenantOverride);
}

/** Whether the export carries billing periods: only a month with an anchored tenant, so every other month keeps its bytes. */
export function hasPeriods(s: Statement): boolean {
  return s.lines.some((l) => l.billingPeriod) || s.adjustments.some((a) => a.billingPeriod);
}

export function renderCsv(s: Statement): string {
  const marked = hasOverrides(s);
  const periods = hasPeriods(s);
  const rows = [[...CSV_COLUMNS, ...(periods ? PERIOD_COLUMNS : []), ...(marked ? [OVERRIDE_COLUMN] : [])].join(",")];
  for (const l of s.lines) rows.push(csvRow(s, "usage", 0, l, marked, periods));
  for (const a of s.adjustments) rows.push(csvRow(s, "adjustment", a.revision, a, marked, periods));
  return rows.join("\r\n") + "\r\n";
}

function lineJson(l: StatementLine) {
  return {
    tenant: l.tenant,
    tenantName: l.tenantName,
    tier: l.tier,
    tierHistory: l.tierHistory.map((t) => ({ tier: t.tier, from: t.from, to: t.to })),
    quotaId: l.quotaId,
    operation: l.operation,
    quotaPeriod: l.quotaPeriod,
    limit: l.limit,
    overagePolicy: l.overage,
    used: l.used,
    overageUnits: l.overageUnits,
    denied: l.denied,
    // Only on overridden lines, so the bytes of every other line stay as they were.
    ...(l.tenantOverride ? { tenantOverride: true } : {}),
    ...(l.billingPeriod ? { billingPeriod: { ...l.billingPeriod } } : {}),
  };
}

/** The dictionary inside the JSON; `tenantOverride` and `billingPeriod.*` only in a month that has one (the bytes of every other month stay). */
function jsonDictionary(marked: boolean, periods: boolean) {
  const isPeriod = (c: string) => (PERIOD_COLUMNS as readonly string[]).includes(c);
  const entries = BILLING_DICTIONARY.filter((d) => !d.json.startsWith("(") && (marked || d.column !== OVERRIDE_COLUMN) && (periods || !isPeriod(d.column)));
  return Object.fromEntries(entries.map((d) => [d.json, { unit: d.unit, meaning: d.meaning }]));
}

/** The dictionary as its own CSV (column, json_field, unit, meaning), for the CSV export. */
export function renderDictionaryCsv(): string {
  const rows = ["column,json_field,unit,meaning", ...BILLING_DICTIONARY.map((d) => [d.column, d.json, d.unit, d.meaning].map(csvField).join(","))];
  return rows.join("\r\n") + "\r\n";
}

export function renderJson(s: Statement): string {
  const doc = {
    period: s.period,
    status: s.status,
    revision: s.revision,
    columnsVersion: 2,
    dictionary: jsonDictionary(hasOverrides(s), hasPeriods(s)),
    lines: s.lines.map(lineJson),
    adjustments: s.adjustments.map((a) => ({ revision: a.revision, ...lineJson(a) })),
  };
  return JSON.stringify(doc, null, 2) + "\n";
}

function stableId(...parts: string[]): string {
  return createHash("sha256").update(parts.join("\u0000")).digest("hex").slice(0, 32);
}

/** Month end as the CloudEvents `time`: fixed for a period, so re-sends are identical. */
function periodEndIso(period: string): string {
  const [y, m] = period.split("-").map(Number) as [number, number];
  return new Date(Date.UTC(y, m, 1) - 1).toISOString();
}

/** A line of a tenant's own period ends at the period's last millisecond; other lines at the month's. */
function lineEndIso(period: string, l: StatementLine): string {
  return l.billingPeriod ? new Date(Date.parse(l.billingPeriod.endAt) - 1).toISOString() : periodEndIso(period);
}

/** The id's parts of a line: a tenant period's label joins them, so its periods never share an id. */
const lineParts = (l: StatementLine) => (l.billingPeriod ? [l.billingPeriod.label] : []);

/**
 * One CloudEvent per tenant × quota (and per adjustment; per tenant period for an anchored tenant).
 * `id` is stable for the same period, tenant, quota and status (and adjustment revision, and
 * tenant period), so a metering system deduplicates re-sends; a provisional figure and the final
 * one have different ids.
 */
export function renderCloudEvents(s: Statement): string {
  const events = [
    ...s.lines.map((l) => ({
      specversion: "1.0",
      id: stableId(s.period, l.tenant, l.quotaId, "usage", s.status, ...lineParts(l)),
      source: "/sluice/billing",
      type: "dev.sluice.billing.quota_usage.v1",
      subject: `tenants/${l.tenant}/quotas/${l.quotaId}`,
      time: lineEndIso(s.period, l),
      datacontenttype: "application/json",
      data: { period: s.period, status: s.status, ...lineJson(l) },
    })),
    ...s.adjustments.map((a) => ({
      specversion: "1.0",
      id: stableId(s.period, a.tenant, a.quotaId, "adjustment", String(a.revision), ...lineParts(a)),
      source: "/sluice/billing",
      type: "dev.sluice.billing.quota_adjustment.v1",
      subject: `tenants/${a.tenant}/quotas/${a.quotaId}`,
      time: lineEndIso(s.period, a),
      datacontenttype: "application/json",
      data: { period: s.period, status: s.status, revision: a.revision, ...lineJson(a) },
    })),
  ];
  return JSON.stringify(events, null, 2) + "\n";
}

export const CONTENT_TYPES: Record<BillingFormat, string> = {
  csv: "text/csv; charset=utf-8; header=present",
  json: "application/json; charset=utf-8",
  cloudevents: "application/cloudevents-batch+json; charset=utf-8",
  ...METER_CONTENT_TYPES,
};

export function renderStatement(s: Statement, format: BillingFormat): string {
  if (format === "openmeter" || format === "lago" || format === "orb") return METER_RENDERERS[format](s);
  return format === "csv" ? renderCsv(s) : format === "json" ? renderJson(s) : renderCloudEvents(s);
}

export function sha256Hex(body: string): string {
  return createHash("sha256").update(body, "utf8").digest("hex");
}
