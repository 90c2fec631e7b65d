import Link from "next/link";
import type { ActionResult } from "@/lib/errors";
import { AlertButtons } from "./alert-buttons";
import { formatTime } from "./ui";

export interface AlertItem {
  id: string;
  message: string;
  startedAt: Date;
  resolvedAt: Date | null;
  policyVersion: number | null;
  acknowledgedBy?: string | null;
  silencedUntil?: Date | null;
  silencedBy?: string | null;
}

type Act = (input: unknown) => Promise<ActionResult>;

/**
 * Alerts (firing first): what fired, since when, the policy version published before it began with
 * a link to that version's own change, and who acknowledged or silenced it.
 */
export function AlertList({ alerts, canAct, acknowledge, silence }: { alerts: AlertItem[]; canAct: boolean; acknowledge: Act; silence: Act }) {
  if (alerts.length === 0) {
    return (
      <div className="card text-sm text-slate-600" data-testid="alerts-slot">
        No alert in the last 24 hours. See <Link className="text-indigo-700 hover:underline" href="/dashboards">Dashboards</Link> for decision rates.
      </div>
    );
  }
  const sorted = [...alerts].sort((a, b) => Number(a.resolvedAt !== null) - Number(b.resolvedAt !== null));
  return (
    <ul className="card flex flex-col divide-y divide-slate-100 text-sm" data-testid="alert-list">
      {sorted.map((a) => (
        <li key={a.id} className="flex flex-col gap-1 py-2 first:pt-0 last:pb-0" data-testid="alert">
          <div className="flex flex-wrap items-center gap-2">
            <span className={`badge ${a.resolvedAt ? "bg-slate-100 text-slate-600" : "bg-red-100 text-red-800"}`}>{a.resolvedAt ? "resolved" : "firing"}</span>
            <span className="min-w-0 break-words">{a.message}</span>
          </div>
          <div className="flex flex-wrap items-center gap-x-3 gap-y-1 text-xs text-slate-600">
            <span>since {formatTime(a.startedAt)}</span>
            {a.policyVersion !== null ? (
              <Link className="text-indigo-700 hover:underline" href={`/policy?version=${a.policyVersion}`} data-testid="alert-version-link">
                after policy v{a.policyVersion}: what it changed
              </Link>
            ) : (
              <span>no policy published before it</span>
            )}
            {a.acknowledgedBy && <span data-testid="alert-acknowledged">acknowledged by {a.acknowledgedBy.replace(/^user:/, "")}</span>}
            {a.silencedUntil && (
              <span data-testid="alert-silenced">
                silenced until {formatTime(a.silencedUntil)} by {a.silencedBy?.replace(/^user:/, "")}
              </span>
            )}
          </div>
          {canAct && !a.resolvedAt && <AlertButtons id={a.id} acknowledge={acknowledge} silence={silence} acknowledged={Boolean(a.acknowledgedBy)} />}
        </li>
      ))}
    </ul>
  );
}
