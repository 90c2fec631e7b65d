/**
 * All tenants' overrides on one list (the Tenants page), each with its expiry said plainly:
 * "expired 2 h ago" (still in the draft, enforced by nothing), "expires in 3 days", "no expiry".
 * Edit one on its tenant's page.
 */
import Link from "next/link";
import { formatTime } from "./ui";

export interface OverrideListItem {
  id: string;
  tenant: string;
  operation: string;
  scope: string | null;
  period: string | null;
  limit: number;
  algorithm: string | null;
  windowMs: number | null;
  /** ISO time, or null. */
  expiresAt: string | null;
}

/** "in 3 days", "2 h ago": the nearest whole unit. */
export function relativeTo(atMs: number, nowMs: number): string {
  const d = atMs - nowMs;
  const abs = Math.abs(d);
  const [n, unit] = abs >= 86_400_000 ? [Math.floor(abs / 86_400_000), "day"] : abs >= 3_600_000 ? [Math.floor(abs / 3_600_000), "h"] : [Math.max(1, Math.floor(abs / 60_000)), "min"];
  const text = unit === "day" ? `${n} day${n === 1 ? "" : "s"}` : `${n} ${unit}`;
  return d >= 0 ? `in ${text}` : `${text} ago`;
}

export function OverridesList({ rows, total, nowMs }: { rows: OverrideListItem[]; total: number; nowMs: number }) {
  if (rows.length === 0) return <p className="text-sm text-slate-600">No tenant has an override.</p>;
  return (
    <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
      <table className="table text-sm" data-testid="overrides-list">
        <thead>
          <tr>
            <th>Tenant</th>
            <th>Override</th>
            <th>Expiry</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((o) => {
            const at = o.expiresAt ? Date.parse(o.expiresAt) : null;
            const expired = at !== null && at <= nowMs;
            return (
              <tr key={o.id} data-testid="override-row" data-expired={expired ? "yes" : "no"}>
                <td>
                  <Link className="font-medium text-indigo-700 hover:underline" href={`/tenants/${o.tenant}`}>
                    {o.tenant}
                  </Link>
                </td>
                <td>
                  {o.operation === "*" ? "all operations" : o.operation} · {o.scope ? `${o.scope.replace("_", " ")} limit` : `${o.period} quota`} {o.limit.toLocaleString("en-US")}
                  {o.windowMs ? ` per ${o.windowMs % 60_000 === 0 ? `${o.windowMs / 60_000} min` : `${o.windowMs / 1000} s`}` : ""}
                  {o.algorithm ? ` (${o.algorithm.replaceAll("_", " ")})` : ""}
                </td>
                <td className={expired ? "font-medium text-red-700" : undefined}>
                  {at === null ? "no expiry" : `${expired ? "expired" : "expires"} ${relativeTo(at, nowMs)} (${formatTime(o.expiresAt!)})`}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {total > rows.length && <p className="px-3 py-2 text-xs text-slate-500">The first {rows.length} of {total.toLocaleString("en-US")}, soonest expiry first.</p>}
    </div>
  );
}
