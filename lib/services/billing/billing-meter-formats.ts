/**
 * A closed month's billing statement as the usage events metering and billing products ingest:
 * OpenMeter (CloudEvents), Lago (batch events) and Orb (ingest events). Pure and deterministic, like
 * lib/services/billing/billing-format.ts: the same statement renders to the same bytes, and every event
 * carries an idempotency key derived from (tenant, quota, period, line) only, so sending a month
 * again is a no-op at the receiver. An open (provisional) month renders an empty batch: its figures
 * still grow, and a receiver that took them would drop the final figures as duplicates; so a month
 * reaches a billing system once, closed, and sending an open one is harmless.
 *
 * One line = one event: a usage line (`usage`), or an adjustment batch (`adjustment-<revision>`).
 * A tenant that changed tier in the month has a line per tier's quota, each dated by the days it
 * was on that tier (`from`, `to` from tier_history). A tenant on its own billing period has a line
 * per period ending in the month (lib/policy/billing-month.ts): `from`/`to` are its local days, the
 * event's instant its last millisecond, and the period's label stands in the key for the month. The
 * field mappings are in
 * docs/billing-periods.md, "Exports for billing systems".
 */
import { createHash } from "node:crypto";
import type { Statement, StatementLine } from "./statement";

export const METER_FORMATS = ["openmeter", "lago", "orb"] as const;
export type MeterFormat = (typeof METER_FORMATS)[number];

/** The meter / billable metric / event name every event uses; filter by `operation` for one quota. */
export const METER_EVENT = "sluice_quota_units";

export const METER_CONTENT_TYPES: Record<MeterFormat, string> = {
  openmeter: "application/cloudevents-batch+json; charset=utf-8",
  lago: "application/json; charset=utf-8",
  orb: "application/json; charset=utf-8",
};

interface MeterLine {
  line: string;
  l: StatementLine;
  /** The key's period: the month, or the tenant period's label. */
  keyPeriod: string;
  /** The event's instant, ISO 8601. */
  at: string;
  /** First and last UTC day of the line in the month (its tier's days; the whole month without a tier change). */
  from: string;
  to: string;
}

/** `sluice-<32 hex>`: sha256 of tenant, quota, period and line; never of the figures, never of the time of export. */
export function idempotencyKey(tenant: string, quotaId: string, period: string, line: string): string {
  return `sluice-${createHash("sha256").update([tenant, quotaId, period, line].join("\u0000")).digest("hex").slice(0, 32)}`;
}

function monthDays(period: string): { first: string; last: string } {
  const [y, m] = period.split("-").map(Number) as [number, number];
  return { first: `${period}-01`, last: new Date(Date.UTC(y, m, 0)).toISOString().slice(0, 10) };
}

function linesOf(s: Statement): MeterLine[] {
  if (s.status !== "final") return [];
  const month = monthDays(s.period);
  const dated = (l: StatementLine) => {
    const spans = l.tierHistory.filter((t) => t.tier === l.tier);
    const p = l.billingPeriod;
    const whole = p ? { from: p.start, to: p.end } : { from: month.first, to: month.last };
    const days = spans.length > 0 ? { from: spans[0]!.from, to: spans[spans.length - 1]!.to } : whole;
    // A tenant period's event sits at its last millisecond, inside the period whatever the tier's days.
    const at = p ? new Date(Date.parse(p.endAt) - 1).toISOString() : endOf(days.to);
    return { ...days, keyPeriod: p ? p.label : s.period, at };
  };
  return [
    ...s.lines.map((l) => ({ line: "usage", l, ...dated(l) })),
    ...s.adjustments.map((a) => ({ line: `adjustment-${a.revision}`, l: a as StatementLine, ...dated(a) })),
  ];
}

/** The event's instant: the last millisecond of the line's last day (inside the month, whatever the receiver's window). */
const endOf = (day: string) => `${day}T23:59:59.999Z`;

function properties(s: Statement, m: MeterLine) {
  return {
    period: s.period,
    line: m.line,
    from: m.from,
    to: m.to,
    tier: m.l.tier,
    quota_id: m.l.quotaId,
    operation: m.l.operation,
    quota_period: m.l.quotaPeriod,
    limit: m.l.limit,
    overage_policy: m.l.overage,
    units: m.l.used,
    overage_units: m.l.overageUnits,
    denied: m.l.denied,
    // Only on a tenant period's line, so every other event keeps its bytes.
    ...(m.l.billingPeriod ? { period_label: m.l.billingPeriod.label, time_zone: m.l.billingPeriod.timeZone, period_start_at: m.l.billingPeriod.startAt, period_end_at: m.l.billingPeriod.endAt } : {}),
  };
}

/** OpenMeter: a CloudEvents batch; subject = the customer (tenant slug), the meter sums `data.units`. */
export function renderOpenMeter(s: Statement): string {
  const events = linesOf(s).map((m) => ({
    specversion: "1.0",
    id: idempotencyKey(m.l.tenant, m.l.quotaId, m.keyPeriod, m.line),
    source: "sluice",
    type: METER_EVENT,
    subject: m.l.tenant,
    time: m.at,
    datacontenttype: "application/json",
    data: properties(s, m),
  }));
  return JSON.stringify(events, null, 2) + "\n";
}

/** Lago: `POST /api/v1/events/batch`'s body; the billable metric `sluice_quota_units` sums `properties.units`. */
export function renderLago(s: Statement): string {
  const events = linesOf(s).map((m) => ({
    transaction_id: idempotencyKey(m.l.tenant, m.l.quotaId, m.keyPeriod, m.line),
    external_customer_id: m.l.tenant,
    code: METER_EVENT,
    timestamp: Math.floor(Date.parse(m.at) / 1000),
    properties: properties(s, m),
  }));
  return JSON.stringify({ events }, null, 2) + "\n";
}

/** Orb: `POST /v1/ingest`'s body; a metric on event_name `sluice_quota_units` sums `properties.units`. */
export function renderOrb(s: Statement): string {
  const events = linesOf(s).map((m) => ({
    idempotency_key: idempotencyKey(m.l.tenant, m.l.quotaId, m.keyPeriod, m.line),
    external_customer_id: m.l.tenant,
    event_name: METER_EVENT,
    timestamp: m.at,
    properties: properties(s, m),
  }));
  return JSON.stringify({ events }, null, 2) + "\n";
}

export const METER_RENDERERS: Record<MeterFormat, (s: Statement) => string> = { openmeter: renderOpenMeter, lago: renderLago, orb: renderOrb };

/** Each format's fields, for docs/billing-periods.md and the dictionary (the same table). */
export const METER_FIELDS: Record<MeterFormat, ReadonlyArray<{ field: string; from: string }>> = {
  openmeter: [
    { field: "id", from: "idempotency key (tenant, quota, period — the month, or an anchored tenant's period label — line)" },
    { field: "source", from: "sluice" },
    { field: "type", from: METER_EVENT },
    { field: "subject", from: "tenant slug (the customer)" },
    { field: "time", from: "the line's last day, 23:59:59.999 UTC (an anchored tenant's line: its period's last millisecond)" },
    { field: "data.*", from: "the properties below" },
  ],
  lago: [
    { field: "transaction_id", from: "idempotency key (tenant, quota, period — the month, or an anchored tenant's period label — line)" },
    { field: "external_customer_id", from: "tenant slug" },
    { field: "code", from: METER_EVENT },
    { field: "timestamp", from: "the line's last day, 23:59:59 UTC (an anchored tenant's line: its period's last second), Unix seconds" },
    { field: "properties.*", from: "the properties below" },
  ],
  orb: [
    { field: "idempotency_key", from: "idempotency key (tenant, quota, period — the month, or an anchored tenant's period label — line)" },
    { field: "external_customer_id", from: "tenant slug" },
    { field: "event_name", from: METER_EVENT },
    { field: "timestamp", from: "the line's last day, 23:59:59.999 UTC (an anchored tenant's line: its period's last millisecond), ISO 8601" },
    { field: "properties.*", from: "the properties below" },
  ],
};
