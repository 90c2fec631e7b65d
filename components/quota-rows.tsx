"use client";
/**
 * A tier's quotas (./tier-editor.tsx): one row per quota (operation, period, limit, overage) with
 * the sentence it reads as.
 */
import { OVERAGES, PERIODS } from "@/lib/policy/types";
import { describeQuota } from "./limit-sentence";
import { Field, numberOrUndefined } from "./tier-editor-fields";

export interface QuotaDraft {
  operation: string;
  period: string;
  limit?: number;
  overage: string;
}

export function QuotaRows({
  quotas,
  quotaErrors,
  rows,
  canEdit,
  updateQuota,
  setQuotas,
}: {
  quotas: QuotaDraft[];
  quotaErrors: Record<string, string>[];
  /** The operations a quota may name (`*` first). */
  rows: string[];
  canEdit: boolean;
  updateQuota: (i: number, patch: Partial<QuotaDraft>) => void;
  setQuotas: (change: (quotas: QuotaDraft[]) => QuotaDraft[]) => void;
}) {
  return (
    <div>
      <div className="mb-2 flex items-end justify-between">
        <h2 className="text-base font-semibold">Quotas</h2>
        {canEdit && (
          <button type="button" className="btn" onClick={() => setQuotas((all) => [...all, { operation: "*", period: "month", limit: 10000, overage: "block" }])}>
            + Add quota
          </button>
        )}
      </div>
      {quotas.length === 0 ? (
        <p className="rounded-lg border border-dashed border-slate-300 bg-white px-4 py-3 text-sm text-slate-600">No quota: tenants of this tier have no monthly or daily budget. Add one to cap or bill usage per period.</p>
      ) : (
        <div className="flex flex-col gap-2">
          {quotas.map((q, i) => (
            <fieldset key={i} disabled={!canEdit} className="card grid grid-cols-2 items-end gap-3 md:grid-cols-5" data-testid="quota-row">
              <Field id={`q${i}-operation`} label="Operation" error={quotaErrors[i]?.operation}>
                <select id={`q${i}-operation`} className="input" value={q.operation} onChange={(e) => updateQuota(i, { operation: e.target.value })}>
                  {rows.map((o) => (
                    <option key={o}>{o}</option>
                  ))}
                </select>
              </Field>
              <Field id={`q${i}-period`} label="Period" error={quotaErrors[i]?.period}>
                <select id={`q${i}-period`} className="input" value={q.period} onChange={(e) => updateQuota(i, { period: e.target.value })}>
                  {PERIODS.map((p) => (
                    <option key={p}>{p}</option>
                  ))}
                </select>
              </Field>
              <Field id={`q${i}-limit`} label="Limit" error={quotaErrors[i]?.limit}>
                <input id={`q${i}-limit`} type="number" min={1} className="input" value={q.limit ?? ""} onChange={(e) => updateQuota(i, { limit: numberOrUndefined(e.target.value) })} />
              </Field>
              <Field id={`q${i}-overage`} label="Overage" error={quotaErrors[i]?.overage}>
                <select id={`q${i}-overage`} className="input" value={q.overage} onChange={(e) => updateQuota(i, { overage: e.target.value })}>
                  {OVERAGES.map((o) => (
                    <option key={o}>{o}</option>
                  ))}
                </select>
              </Field>
              <button type="button" className="btn" onClick={() => setQuotas((all) => all.filter((_, j) => j !== i))}>
                Remove
              </button>
              <p className="col-span-full text-sm text-slate-600">{describeQuota(q)}</p>
            </fieldset>
          ))}
        </div>
      )}
    </div>
  );
}
