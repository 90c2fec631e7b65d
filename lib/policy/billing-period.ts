/**
 * Billing periods per tenant (docs/billing-periods.md): a tenant's `month` quotas run from its
 * billing anchor's day of month at local midnight in its time zone, its `day` quotas from local
 * midnight to local midnight. Without `billing` a tenant has the UTC calendar month and day, with
 * exactly the labels of ./quota-period.ts (`2026-12`, `2026-12-02`), so counters keep their keys.
 *
 * Pure: time arrives as `nowMs`. The decision server passes the store the current
 * period's end, its label, the next period's label and end (`billingWindow`), and the store picks
 * one by its own clock, as every window is decided.
 *
 * Labels, the suffix of a quota's counter key (`…:q:<quotaId>:<label>`):
 *   UTC calendar month (no billing, or anchor day 1 in UTC)  `2026-12`
 *   UTC day                                                  `2026-12-02`
 *   any other month                                          `<local start date>@<zone>`  `2026-03-15@America/Los_Angeles`
 *   a day in another zone                                    `<local date>@<zone>`        `2026-03-15@Europe/Paris`
 *   the first period after a billing change                  `<local start, to the second>@<zone>`  `2026-03-20T134510@Europe/Paris`
 * A label names one stretch of time of one zone, so a tenant that changes its billing never meets
 * an old counter again.
 */
import { quotaPeriod, type QuotaPeriod } from "./quota-period";
import type { Period } from "./types";
import { daysInMonth, isoDate, localDate, localStamp, startOfLocalDay } from "./zoned-time";

/** A tenant's billing as compiled (the policy file's `billing`, validated). */
export interface CompiledBilling {
  /** The anchor as written, `YYYY-MM-DD`; only its day of month shapes the periods. */
  anchor: string;
  /** An IANA time zone name, as written. */
  timeZone: string;
}

/**
 * What publish stamps on a tenant whose billing differs from the live version's: from `atMs` the
 * new billing applies, and its first period starts at `atMs` (the one before it ends there).
 */
export interface BillingChange {
  atMs: number;
  /** The billing before the change; null: the default (UTC calendar). */
  previous: CompiledBilling | null;
}

/** A period plus the billing that made it: enough to say which counter it is. */
export type BillingPeriod = QuotaPeriod;

const UTC = "UTC";

/** A real calendar date `YYYY-MM-DD` (years 1970–9999): what a billing anchor must be. */
export function isBillingAnchor(value: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return y >= 1970 && mo >= 1 && mo <= 12 && d >= 1 && d <= daysInMonth(y, mo);
}

/** The anchor's day of month, 1–31. */
export function anchorDay(billing: CompiledBilling | null): number {
  return billing === null ? 1 : Number(billing.anchor.slice(8, 10));
}

const zoneOf = (billing: CompiledBilling | null) => billing?.timeZone ?? UTC;

/** True when the billing is the UTC calendar: the legacy periods and labels. */
export function isUtcCalendar(billing: CompiledBilling | null): boolean {
  return zoneOf(billing) === UTC && anchorDay(billing) === 1;
}

/** The start of the anchored month that begins in local (year, month): the anchor day, or the month's last day. */
function anchoredStart(year: number, month: number, day: number, timeZone: string): { startMs: number; date: string } {
  const d = Math.min(day, daysInMonth(year, month));
  return { startMs: startOfLocalDay(year, month, d, timeZone), date: isoDate(year, month, d) };
}

const nextMonth = (y: number, m: number): [number, number] => (m === 12 ? [y + 1, 1] : [y, m + 1]);
const prevMonth = (y: number, m: number): [number, number] => (m === 1 ? [y - 1, 12] : [y, m - 1]);

/** The period of `billing` (no change considered) that contains `nowMs`. */
export function plainBillingPeriod(nowMs: number, period: Period, billing: CompiledBilling | null): BillingPeriod {
  const zone = zoneOf(billing);
  if (zone === UTC && (period === "day" || anchorDay(billing) === 1)) return quotaPeriod(nowMs, period);
  const [y, m, d] = localDate(nowMs, zone);
  if (period === "day") {
    const next = new Date(Date.UTC(y, m - 1, d + 1));
    return {
      startMs: startOfLocalDay(y, m, d, zone),
      endMs: startOfLocalDay(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), zone),
      label: `${isoDate(y, m, d)}@${zone}`,
    };
  }
  const day = anchorDay(billing);
  // The period began this local month if today is on or after this month's (clamped) anchor day.
  const [sy, sm] = d >= Math.min(day, daysInMonth(y, m)) ? [y, m] : prevMonth(y, m);
  const start = anchoredStart(sy, sm, day, zone);
  const end = anchoredStart(...nextMonth(sy, sm), day, zone);
  return { startMs: start.startMs, endMs: end.startMs, label: `${start.date}@${zone}` };
}

/** Whether a change from `before` to `after` gives `period` quotas a new period at the change. */
export function periodsDiffer(period: Period, before: CompiledBilling | null, after: CompiledBilling | null): boolean {
  if (zoneOf(before) !== zoneOf(after)) return true;
  return period === "month" && anchorDay(before) !== anchorDay(after);
}

/**
 * The period containing `nowMs` for a tenant with `billing` and, maybe, a billing change: before
 * the change the previous billing's periods (the one containing the change ends at it), from the
 * change a first period that starts at it and ends where the new billing's period ends, then the
 * new billing's periods.
 */
export function billingPeriod(nowMs: number, period: Period, billing: CompiledBilling | null, change?: BillingChange | null): BillingPeriod {
  if (!change || !periodsDiffer(period, change.previous, billing)) return plainBillingPeriod(nowMs, period, billing);
  if (nowMs < change.atMs) {
    const before = plainBillingPeriod(nowMs, period, change.previous);
    return before.endMs > change.atMs ? { ...before, endMs: change.atMs } : before;
  }
  const after = plainBillingPeriod(nowMs, period, billing);
  if (after.startMs >= change.atMs) return after;
  return { startMs: change.atMs, endMs: after.endMs, label: `${localStamp(change.atMs, zoneOf(billing))}@${zoneOf(billing)}` };
}

/**
 * What the decision server hands the store for one quota (./quota-window.ts): the period containing `nowMs`
 * and the one after it. The store, on its own clock `t`, counts under `current.label` while
 * `t < current.endMs` and under `next.label` (expiring at `next.endMs`) from then on, so a decision
 * server whose clock lags never counts into a period Redis has left.
 */
export function billingWindow(
  nowMs: number,
  period: Period,
  billing: CompiledBilling | null,
  change?: BillingChange | null,
): { current: BillingPeriod; next: BillingPeriod } {
  const current = billingPeriod(nowMs, period, billing, change);
  return { current, next: billingPeriod(current.endMs, period, billing, change) };
}
