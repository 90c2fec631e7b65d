/**
 * What the Billing page says about a month besides its figures: open or closed (and, past its
 * close, why it is still open), and where enforcement's quota counters differ from the export —
 * both numbers, the cause the policy history shows, what to do.
 */
import { formatTime } from "@/components/ui";
import type { BillingOverview } from "@/lib/services/billing/billing-overview";

const n = (x: number) => x.toLocaleString("en-US");

export function PeriodStatus({ overview }: { overview: BillingOverview }) {
  if (overview.status === "final") return <>Final: closed by the worker; it exports the same bytes every time, and usage drained later appears as adjustment lines.</>;
  const { close } = overview;
  if (close.overdue) {
    return (
      <span data-testid="period-status" className="text-amber-800">
        <strong>Past its close</strong> ({formatTime(new Date(close.closesAtMs))}, the month’s end plus BILLING_GRACE_MS) but not closed yet: {close.why} Until it closes its figures stay
        provisional.
      </span>
    );
  }
  return (
    <span data-testid="period-status">
      Provisional: the month is open, and its figures still grow as the worker drains usage (about every minute). The worker closes it at{" "}
      <strong>{formatTime(new Date(close.closesAtMs))}</strong> (the month’s end plus the grace window, BILLING_GRACE_MS); from then on it is final.
    </span>
  );
}

export function DriftNotice({ overview }: { overview: BillingOverview }) {
  const { drift } = overview;
  if (drift.differences.length === 0) {
    if (drift.checkedAtMs === null || overview.status === "final") return null;
    return (
      <p className="mb-3 text-xs text-slate-500" data-testid="drift-ok">
        Enforcement and billing agree: at {formatTime(new Date(drift.checkedAtMs))} the worker compared {n(drift.checked)} quota counters with quota usage, and none differed beyond usage
        in flight.
      </p>
    );
  }
  return (
    <div role="alert" className="card mb-3 border-red-300 bg-red-50 text-sm text-red-900" data-testid="drift-notice">
      <p className="font-semibold">
        Enforcement and billing disagree on {drift.differences.length} quota counter{drift.differences.length === 1 ? "" : "s"} of this month (worker’s check at{" "}
        {formatTime(new Date(drift.checkedAtMs ?? 0))}).
      </p>
      <ul className="mt-2 flex flex-col gap-2">
        {drift.differences.map((d) => (
          <li key={`${d.tenant}/${d.quotaId}/${d.period}`} data-testid="drift-line">
            <span className="font-medium">
              {d.tenant} · quota {d.quotaId} · {d.period}: counter {n(d.redis)} units, export {n(d.expected)} units ({d.difference > 0 ? "+" : ""}
              {n(d.difference)})
            </span>
            <div className="text-xs">{d.why}</div>
            <div className="text-xs">
              <strong>What to do:</strong> {d.todo}
            </div>
          </li>
        ))}
      </ul>
    </div>
  );
}
