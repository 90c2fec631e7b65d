import Link from "next/link";
import { count429, DENIAL_REASON_LABELS, DENIAL_REASONS, DENIAL_STATUS, UNRECORDED_REASON, UNRECORDED_REASON_LABEL, type DenialsByReason } from "@/lib/policy/denial-reasons";

interface Props {
  slug: string;
  windows: { label: string; decisions: number; passed: number; denied: number; byReason: DenialsByReason; share429: number | null }[];
  deniedByLimit: { operation: string; limit: string; denied: number }[];
  quotas: { quotaId: string; operation: string; limit: number; used: number; remaining: number; projected: number; runsOutAt: string | null; usedShare: number; overage: string; retired: boolean }[];
  period: string;
  /** May this role open the dashboards (the per-tenant dashboard link)? */
  canDashboards: boolean;
}

const n = (x: number) => x.toLocaleString("en-US");

/** The denials that are not 429s, in words ("25 tenant suspended (403)"), or a dash. */
function otherDenials(byReason: DenialsByReason): string {
  const parts = DENIAL_REASONS.filter((r) => DENIAL_STATUS[r] !== 429 && byReason[r] > 0).map((r) => `${n(byReason[r])} ${DENIAL_REASON_LABELS[r]}`);
  if (byReason[UNRECORDED_REASON] > 0) parts.push(`${n(byReason[UNRECORDED_REASON])} ${UNRECORDED_REASON_LABEL}`);
  return parts.length > 0 ? parts.join(" · ") : "–";
}
const pct = (x: number | null) => (x === null ? "–" : `${(x * 100).toFixed(1)}%`);

/** A tenant's traffic, its 429s by the limit that denied them, and this month's quota burn. */
export function TenantUsage({ slug, windows, deniedByLimit, quotas, period, canDashboards }: Props) {
  return (
    <div className="flex flex-col gap-4" data-testid="tenant-usage">
      <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
        <table className="table" data-testid="tenant-traffic">
          <thead>
            <tr>
              <th>Traffic</th>
              <th className="text-right">Decisions</th>
              <th className="text-right">Passed</th>
              <th className="text-right">Denied</th>
              <th className="text-right">of them 429</th>
              <th className="text-right">429 share</th>
              <th>Other denials</th>
            </tr>
          </thead>
          <tbody>
            {windows.map((w) => (
              <tr key={w.label}>
                <td>{w.label}</td>
                <td className="text-right tabular-nums">{n(w.decisions)}</td>
                <td className="text-right tabular-nums">{n(w.passed)}</td>
                <td className="text-right tabular-nums">{n(w.denied)}</td>
                <td className="text-right tabular-nums">{n(count429(w.byReason))}</td>
                <td className="text-right tabular-nums">{pct(w.share429)}</td>
                <td className="text-xs text-slate-600">{otherDenials(w.byReason)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div className="grid grid-cols-1 gap-4 lg:grid-cols-2">
        <div className="card">
          <h3 className="mb-2 text-sm font-semibold">429s by limit, last 24 hours</h3>
          {deniedByLimit.length === 0 ? (
            <p className="text-sm text-slate-600">No request of {slug} was denied by a limit in the last 24 hours.</p>
          ) : (
            <ul className="flex flex-col gap-1 text-sm" data-testid="denied-by-limit">
              {deniedByLimit.map((d) => (
                <li key={`${d.operation}|${d.limit}`} className="flex justify-between gap-3">
                  <span className="min-w-0 break-words">
                    <span className="font-mono text-xs">{d.limit}</span> <span className="text-slate-500">on {d.operation}</span>
                  </span>
                  <span className="tabular-nums">rate_limited × {n(d.denied)}</span>
                </li>
              ))}
            </ul>
          )}
        </div>
        <div className="card">
          <h3 className="mb-2 text-sm font-semibold">Monthly quotas, {period}</h3>
          {quotas.length === 0 ? (
            <p className="text-sm text-slate-600">No monthly quota applies to {slug}.</p>
          ) : (
            <ul className="flex flex-col gap-2 text-sm" data-testid="quota-burn">
              {quotas.map((q) => (
                <li key={q.quotaId}>
                  <div className="flex justify-between gap-3">
                    <span>
                      {q.operation === "*" ? "all operations" : q.operation}
                      {q.retired && (
                        <span className="badge ml-1" data-testid="quota-retired">
                          retired
                        </span>
                      )}
                    </span>
                    <span className="tabular-nums">
                      {n(q.used)} / {n(q.limit)} ({pct(q.usedShare)})
                    </span>
                  </div>
                  <div className="mt-1 h-2 rounded bg-slate-100" aria-hidden>
                    <div className={`h-2 rounded ${q.usedShare >= 1 ? "bg-red-500" : q.usedShare >= 0.8 ? "bg-amber-500" : "bg-indigo-500"}`} style={{ width: `${Math.min(100, q.usedShare * 100)}%` }} />
                  </div>
                  <p className="mt-0.5 text-xs text-slate-600">
                    {q.retired
                      ? "no longer in the live policy (retired by a publish or rollback): its usage this month stays billed with the limit it had; nothing counts against it now"
                      : `projected ${n(q.projected)} at month end${q.runsOutAt ? `; runs out ${q.runsOutAt.slice(0, 10)}${q.overage === "bill" ? " (then billed as overage)" : " (then denied)"}` : ""}`}
                  </p>
                </li>
              ))}
            </ul>
          )}
        </div>
      </div>
      {canDashboards && (
        <p className="text-sm">
          <Link className="text-indigo-700 hover:underline" href={`/dashboards/tenants/${slug}`}>
            Charts over time on {slug}&apos;s dashboard →
          </Link>
        </p>
      )}
    </div>
  );
}
