"use client";
/**
 * The tenant page's billing section: the billing anchor and time zone (with the period they give
 * now, computed by the same pure function the decision path uses), the notification thresholds,
 * and every quota notification with its delivery status and a re-send.
 */
import { useMemo, useState, useTransition } from "react";
import { billingPeriod } from "@/lib/policy/billing-period";
import { isKnownTimeZone } from "@/lib/policy/zoned-time";
import type { ActionResult } from "@/lib/errors";
import { Result } from "./tenant-controls";

type Act = (input: unknown) => Promise<ActionResult>;

export interface NotificationRow {
  id: string;
  kind: string;
  threshold: number;
  period: string;
  used: number;
  limit: number;
  status: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
}

const when = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 16) + " UTC";

export function TenantBilling({
  slug,
  billing,
  thresholds,
  tierThresholds,
  nowMs,
  canEdit,
  setBilling,
  setThresholds,
}: {
  slug: string;
  billing: { anchor: string; timeZone: string } | null;
  thresholds: number[] | null;
  tierThresholds: number[];
  nowMs: number;
  canEdit: boolean;
  setBilling: Act;
  setThresholds: Act;
}) {
  const [anchor, setAnchor] = useState(billing?.anchor ?? "");
  const [zone, setZone] = useState(billing?.timeZone ?? "UTC");
  const [percents, setPercents] = useState((thresholds ?? []).join(", "));
  const [result, setResult] = useState<ActionResult | null>(null);
  const [pending, start] = useTransition();
  const preview = useMemo(() => {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(anchor) || !isKnownTimeZone(zone)) return null;
    return billingPeriod(nowMs, "month", { anchor, timeZone: zone });
  }, [anchor, zone, nowMs]);
  const current = billingPeriod(nowMs, "month", billing);
  const parsedPercents = percents.trim() === "" ? null : percents.split(/[\s,]+/).filter(Boolean).map(Number);
  return (
    <div className="card flex flex-col gap-4" data-testid="tenant-billing">
      <p className="text-sm text-slate-700">
        {billing ? `Month quotas run from day ${Number(billing.anchor.slice(8))} at 00:00 ${billing.timeZone}` : "Month quotas run on the UTC calendar month"}: this period{" "}
        <strong>
          {when(current.startMs)} – {when(current.endMs)}
        </strong>
        .
      </p>
      <div className="flex flex-wrap items-end gap-3">
        <div>
          <label htmlFor="billing-anchor" className="label">
            Billing anchor
          </label>
          <input id="billing-anchor" type="date" className="input w-44" value={anchor} disabled={!canEdit || pending} onChange={(e) => setAnchor(e.target.value)} />
        </div>
        <div>
          <label htmlFor="billing-zone" className="label">
            Time zone (IANA)
          </label>
          <input id="billing-zone" className="input w-56" value={zone} placeholder="America/Los_Angeles" disabled={!canEdit || pending} onChange={(e) => setZone(e.target.value.trim())} />
        </div>
        {canEdit && (
          <>
            <button type="button" className="btn-primary" disabled={pending || anchor === ""} onClick={() => start(async () => setResult(await setBilling({ slug, billing: { anchor, timeZone: zone } })))}>
              Save billing
            </button>
            {billing && (
              <button type="button" className="btn" disabled={pending} onClick={() => start(async () => setResult(await setBilling({ slug, billing: null })))}>
                UTC calendar month
              </button>
            )}
          </>
        )}
      </div>
      {preview && (billing?.anchor !== anchor || billing?.timeZone !== zone) && (
        <p className="text-sm text-slate-600" data-testid="billing-preview">
          With this anchor the period now would be {when(preview.startMs)} – {when(preview.endMs)}; after publishing, the first one starts at the publish.
        </p>
      )}
      <div className="flex flex-wrap items-end gap-3">
        <div>
          <label htmlFor="tenant-thresholds" className="label">
            Notify at (% of each quota)
          </label>
          <input id="tenant-thresholds" className="input w-44" value={percents} placeholder={tierThresholds.join(", ")} disabled={!canEdit || pending} onChange={(e) => setPercents(e.target.value)} />
        </div>
        {canEdit && (
          <button type="button" className="btn" disabled={pending} onClick={() => start(async () => setResult(await setThresholds({ slug, thresholds: parsedPercents })))}>
            {parsedPercents ? "Save thresholds" : "Use the tier's"}
          </button>
        )}
        <span className="text-sm text-slate-500">{thresholds ? "This tenant's own." : `The tier's: ${tierThresholds.map((t) => `${t}%`).join(", ")}.`}</span>
      </div>
      <Result result={result} />
    </div>
  );
}

export function NotificationsPanel({ slug, rows, canResend, resend }: { slug: string; rows: NotificationRow[]; canResend: boolean; resend: Act }) {
  const [result, setResult] = useState<ActionResult | null>(null);
  const [pending, start] = useTransition();
  if (rows.length === 0) return <p className="card text-sm text-slate-600">No notification yet: none of this tenant&apos;s quotas has reached a threshold.</p>;
  return (
    <div className="card overflow-x-auto p-0" data-testid="tenant-notifications">
      <table className="w-full text-sm">
        <thead className="bg-slate-50 text-left text-xs text-slate-500 uppercase">
          <tr>
            <th className="px-3 py-2">Event</th>
            <th className="px-3 py-2">Period</th>
            <th className="px-3 py-2 text-right">Used / limit</th>
            <th className="px-3 py-2">Status</th>
            <th className="px-3 py-2 text-right">Attempts</th>
            <th className="px-3 py-2" />
          </tr>
        </thead>
        <tbody>
          {rows.map((n) => (
            <tr key={n.id} className="border-t border-slate-100">
              <td className="px-3 py-2">{n.kind === "threshold" ? `${n.threshold}% reached` : "recovered"}</td>
              <td className="px-3 py-2 font-mono text-xs break-all">{n.period}</td>
              <td className="px-3 py-2 text-right">
                {n.used.toLocaleString("en-US")} / {n.limit.toLocaleString("en-US")}
              </td>
              <td className="px-3 py-2" title={n.lastError ?? undefined}>
                <span className={`badge ${n.status === "delivered" ? "bg-green-100 text-green-800" : n.status === "failed" ? "bg-red-100 text-red-800" : "bg-amber-100 text-amber-800"}`}>{n.status}</span>
                {n.lastError && <span className="ml-1 text-xs text-slate-500">{n.lastError}</span>}
              </td>
              <td className="px-3 py-2 text-right">{n.attempts}</td>
              <td className="px-3 py-2 text-right">
                {canResend && n.status !== "pending" && (
                  <button type="button" className="btn" disabled={pending} onClick={() => start(async () => setResult(await resend({ slug, id: n.id })))}>
                    Re-send
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <div className="px-3 py-2">
        <Result result={result} />
      </div>
    </div>
  );
}
