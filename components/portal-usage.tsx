/**
 * The customer portal's body: one tenant's quotas (used of limit this period, when it resets, the
 * thresholds crossed) and rate limits, from lib/policy/tenant-usage-answer.ts. Presentation only;
 * one column on a phone, two on a desktop.
 */
import type { TenantUsageAnswer, UsageQuotaRow } from "@/lib/policy/tenant-usage-answer";
import { formatDurationMs } from "@/lib/policy/duration";
import { num } from "./format-numbers";

const when = (iso: string) => iso.replace("T", " ").slice(0, 16) + " UTC";

function QuotaCard({ q }: { q: UsageQuotaRow }) {
  const share = q.limit > 0 ? Math.min(1, q.used / q.limit) : 1;
  const tone = share >= 1 ? "bg-red-600" : share >= 0.8 ? "bg-amber-500" : "bg-indigo-600";
  const what = q.operation === "*" ? "All requests" : q.operation;
  return (
    <li className="card" data-testid="portal-quota">
      <div className="flex items-baseline justify-between gap-3">
        <h3 className="font-medium">
          {what} <span className="text-sm font-normal text-slate-500">per {q.period}</span>
        </h3>
        <span className="text-sm text-slate-600">{Math.round(share * 100)}%</span>
      </div>
      <div className="mt-2 h-2 w-full overflow-hidden rounded bg-slate-200" role="progressbar" aria-valuemin={0} aria-valuemax={q.limit} aria-valuenow={q.used} aria-label={`${what} used`}>
        <div className={`h-2 ${tone}`} style={{ width: `${share * 100}%` }} />
      </div>
      <dl className="mt-3 grid grid-cols-2 gap-x-3 gap-y-1 text-sm">
        <dt className="text-slate-500">Used</dt>
        <dd data-testid="portal-used">{num(q.used)}</dd>
        <dt className="text-slate-500">Limit</dt>
        <dd>{num(q.limit)}</dd>
        <dt className="text-slate-500">Remaining</dt>
        <dd data-testid="portal-remaining">{num(q.remaining)}</dd>
        <dt className="text-slate-500">Resets</dt>
        <dd>{when(q.periodEnd)}</dd>
        <dt className="text-slate-500">Period</dt>
        <dd className="break-words">
          {when(q.periodStart)} – {when(q.periodEnd)}
        </dd>
        {q.overage === "bill" && (
          <>
            <dt className="text-slate-500">Billed above limit</dt>
            <dd>{num(q.overageUnits)}</dd>
          </>
        )}
        <dt className="text-slate-500">Warnings at</dt>
        <dd>{q.thresholds.map((t) => `${t}%${q.thresholdsCrossed.includes(t) ? " ✓" : ""}`).join(", ") || "none"}</dd>
      </dl>
    </li>
  );
}

export function PortalUsage({ usage, expiresAt }: { usage: TenantUsageAnswer; expiresAt: string }) {
  return (
    <main className="mx-auto max-w-5xl px-4 py-6">
      <header className="mb-5">
        <p className="text-xs font-medium tracking-wide text-slate-500 uppercase">Usage and limits</p>
        <h1 className="text-xl font-semibold tracking-tight" data-testid="portal-tenant">
          {usage.tenant}
        </h1>
        <p className="mt-1 text-sm text-slate-600">
          Plan <strong>{usage.tier}</strong> · as of {when(usage.asOf)} · this link works until {when(expiresAt)}
        </p>
      </header>
      <section className="mb-6">
        <h2 className="mb-2 text-base font-semibold">Quotas</h2>
        {usage.quotas.length === 0 ? (
          <p className="text-sm text-slate-600">No quota applies to this plan.</p>
        ) : (
          <ul className="grid gap-3 md:grid-cols-2">
            {usage.quotas.map((q) => (
              <QuotaCard key={q.quotaId} q={q} />
            ))}
          </ul>
        )}
      </section>
      <section>
        <h2 className="mb-2 text-base font-semibold">Rate limits</h2>
        <ul className="grid gap-2 md:grid-cols-2">
          {usage.limits.map((l) => (
            <li key={`${l.name}-${l.algorithm}`} className="card text-sm" data-testid="portal-limit">
              <span className="font-medium">{l.operation === "*" ? "All requests" : l.operation}</span>: {num(l.limit)}{" "}
              {l.algorithm === "concurrency" ? "at a time" : `per ${formatDurationMs(l.windowSeconds * 1000)}`}{" "}
              <span className="text-slate-500">(per {l.scope === "api_key" ? "API key" : l.scope === "ip" ? "client address" : l.scope === "tenant" ? "account" : "service"})</span>
            </li>
          ))}
        </ul>
      </section>
    </main>
  );
}

/** What a refused link shows: no tenant, no number, only why. */
export function PortalRefused({ text }: { text: string }) {
  return (
    <main className="mx-auto max-w-md px-4 py-16 text-center" data-testid="portal-refused">
      <h1 className="text-lg font-semibold">{text}</h1>
      <p className="mt-2 text-sm text-slate-600">Ask your provider for a new usage link.</p>
    </main>
  );
}
