/**
 * The Billing page's controls: a month picker (the months billing has, from the first usage to
 * now), a tenant filter, and the time the figures were read ("as of"), which refreshes with the
 * page. A plain GET form: it works without script, and the URL is the state.
 */
import { AutoRefresh } from "@/components/charts/auto-refresh";

export function PeriodControls({
  period,
  tenant,
  tenants,
  first,
  current,
  asOfMs,
}: {
  period: string;
  tenant: string | null;
  tenants: ReadonlyArray<{ slug: string; name: string }>;
  first: string | null;
  current: string;
  asOfMs: number;
}) {
  return (
    <div className="card mb-4 flex flex-wrap items-end justify-between gap-3" data-testid="billing-controls">
      <form method="get" action="/billing" className="flex flex-wrap items-end gap-3">
        <label className="flex flex-col text-xs text-slate-600">
          Month (UTC)
          <input
            type="month"
            name="period"
            defaultValue={period}
            min={first ?? current}
            max={current}
            required
            className="input mt-1"
            data-testid="month-picker"
          />
        </label>
        <label className="flex flex-col text-xs text-slate-600">
          Tenant
          <select name="tenant" defaultValue={tenant ?? ""} className="input mt-1" data-testid="tenant-filter">
            <option value="">All tenants</option>
            {tenants.map((t) => (
              <option key={t.slug} value={t.slug}>
                {t.name} ({t.slug})
              </option>
            ))}
          </select>
        </label>
        <button type="submit" className="btn">
          Show
        </button>
      </form>
      <div className="flex flex-col items-end gap-1 text-xs text-slate-600">
        <span data-testid="as-of">
          As of <time dateTime={new Date(asOfMs).toISOString()}>{new Date(asOfMs).toISOString().slice(0, 19).replace("T", " ")} UTC</time>
        </span>
        <AutoRefresh seconds={60} />
      </div>
    </div>
  );
}
