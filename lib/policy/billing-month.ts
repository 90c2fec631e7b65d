/**
 * Which of a tenant's own billing periods a monthly billing export holds (docs/billing-periods.md,
 * "The export of an anchored tenant"): **a month `M` holds, for each tenant, every period of its
 * `month` quotas whose last local day falls in `M`**, the local day in the period's own time zone.
 * So a tenant anchored on the 15th has the period Nov 15 – Dec 14 in December's export, a tenant
 * anchored on the 1st in Los Angeles the local calendar month (Nov 1 – Nov 30, ending at
 * 08:00 UTC on Dec 1) in November's, and a billing change mid-period, which ends one period and
 * starts another, can put two periods of one tenant in one month. The current month's export holds
 * the period that is current then if it ends in that month.
 *
 * A tenant whose only period ending in `M` is the UTC calendar month itself (no billing, or anchor
 * day 1 in UTC) is exported as before, one line per quota of the month.
 *
 * Pure: the tenant's billing at any instant comes from `billingAt` (the policy history).
 */
import { billingPeriod, type BillingChange, type CompiledBilling } from "./billing-period";
import { localDate } from "./zoned-time";

/** A tenant's billing as a published version states it (no version, or tenant absent: null). */
export interface TenantBillingState {
  billing: CompiledBilling | null;
  change: BillingChange | null;
}

/** One of a tenant's own month periods, as the export states it. */
export interface TenantPeriod {
  startMs: number;
  /** Exclusive. */
  endMs: number;
  /** The counter label (lib/policy/billing-period.ts): `2026-11-15@America/Los_Angeles`, or `2026-11`. */
  label: string;
  timeZone: string;
  /** The first local day, `YYYY-MM-DD`. */
  startDate: string;
  /** The last local day (inclusive), `YYYY-MM-DD`. */
  endDate: string;
}

const DAY_MS = 86_400_000;

/**
 * The suffix of the quota usage row that counts, per UTC month, what of that month a tenant spent
 * in its own periods (`2026-11#own`): the export subtracts it from the UTC month row for the
 * calendar month a billing change cut short.
 */
export const OWN_SHARE_SUFFIX = "#own";

/** The zone a label names: after `@`, or UTC for the calendar labels. */
export function labelZone(label: string): string {
  const at = label.indexOf("@");
  return at < 0 ? "UTC" : label.slice(at + 1);
}

const ymd = (ms: number, zone: string) => {
  const [y, m, d] = localDate(ms, zone);
  return `${String(y).padStart(4, "0")}-${String(m).padStart(2, "0")}-${String(d).padStart(2, "0")}`;
};

/** `YYYY-MM` of the period's last local day: the billing month whose export holds it. */
export function billingMonthOf(period: { endMs: number; label: string }): string {
  return ymd(period.endMs - 1, labelZone(period.label)).slice(0, 7);
}

function describe(p: { startMs: number; endMs: number; label: string }): TenantPeriod {
  const zone = labelZone(p.label);
  return { startMs: p.startMs, endMs: p.endMs, label: p.label, timeZone: zone, startDate: ymd(p.startMs, zone), endDate: ymd(p.endMs - 1, zone) };
}

/**
 * The month period containing `atMs`, by the billing the history gives for it. A version published
 * inside that period may stamp a billing change that ends it early (and only a later version
 * knows), so the period is recomputed with the version live at its last instant until it stops
 * shrinking.
 */
function periodAt(atMs: number, billingAt: (atMs: number) => TenantBillingState | null): TenantPeriod | null {
  let state = billingAt(atMs);
  if (state === null) return null;
  let p = billingPeriod(atMs, "month", state.billing, state.change);
  for (let i = 0; i < 12; i++) {
    const later = billingAt(p.endMs - 1);
    if (later === null) break;
    const q = billingPeriod(atMs, "month", later.billing, later.change);
    if (q.endMs >= p.endMs && q.label === p.label) break;
    state = later;
    p = q;
  }
  return describe(p);
}

/** `2026-11` → [start, end) in ms, UTC. */
function utcMonth(month: string): { startMs: number; endMs: number } {
  const [y, m] = month.split("-").map(Number) as [number, number];
  return { startMs: Date.UTC(y, m - 1, 1), endMs: Date.UTC(y, m, 1) };
}

/**
 * The tenant's month periods whose last local day is in `month`, oldest first. Every zone's day is
 * within 14 hours of UTC, so these periods end between the UTC month's start and a day after its
 * end; the walk starts 40 days earlier to reach the first of them.
 */
export function periodsEndingInMonth(month: string, billingAt: (atMs: number) => TenantBillingState | null): TenantPeriod[] {
  const { startMs, endMs } = utcMonth(month);
  const out: TenantPeriod[] = [];
  let t = startMs - 40 * DAY_MS;
  while (t < endMs + DAY_MS) {
    const p = periodAt(t, billingAt);
    if (p === null) {
      t += DAY_MS;
      continue;
    }
    if (billingMonthOf(p) === month) out.push(p);
    t = p.endMs;
  }
  return out;
}

/** True when the periods are the UTC calendar month `month` alone: the tenant is exported as before. */
export function isCalendarMonth(periods: readonly TenantPeriod[], month: string): boolean {
  const { startMs, endMs } = utcMonth(month);
  return periods.length === 1 && periods[0]!.label === month && periods[0]!.startMs === startMs && periods[0]!.endMs === endMs;
}
