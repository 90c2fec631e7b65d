"use client";
/**
 * Capacity for a global cap (on /advisor): the downstream's capacity and the target utilisation
 * give the cap per window, and each tier's guaranteed share under weighted fair share when every
 * tenant contends (lib/policy/capacity.ts, the same arithmetic as the fair share itself). Pure,
 * so it runs in the browser as the inputs change.
 */
import { useMemo, useState } from "react";
import { parseDurationMs, formatDurationMs } from "@/lib/policy/duration";
import { planCapacity } from "@/lib/policy/capacity";
import { capacityInputSchema, fieldErrors } from "@/lib/services/justify/justify-input";
import type { JustifyContext } from "@/lib/services/justify/justify-context";
import { num, pct } from "@/components/format-numbers";

export function CapacityPanel({ tiers, globalCaps }: { tiers: JustifyContext["tiers"]; globalCaps: JustifyContext["globalCaps"] }) {
  const [capacity, setCapacity] = useState("100");
  const [utilisation, setUtilisation] = useState("70");
  const [capWindow, setWindow] = useState(globalCaps[0] ? formatDurationMs(globalCaps[0].windowMs) : "1s");
  const [capId, setCapId] = useState(globalCaps[0]?.id ?? "");

  const parsed = useMemo(() => capacityInputSchema.safeParse({ capacityPerSecond: capacity, utilisationPct: utilisation, window: capWindow }), [capacity, utilisation, capWindow]);
  const errors = parsed.success ? [] : fieldErrors(parsed.error);
  const plan = parsed.success
    ? planCapacity({
        capacityPerSecond: parsed.data.capacityPerSecond,
        utilisation: parsed.data.utilisationPct / 100,
        windowMs: parseDurationMs(parsed.data.window)!,
        tiers,
      })
    : null;
  const cap = globalCaps.find((c) => c.id === capId) ?? null;
  const errorOf = (field: string) => errors.find((e) => e.field === field);

  return (
    <div className="card flex flex-col gap-3" data-testid="capacity-panel">
      <div className="grid grid-cols-2 gap-3 md:grid-cols-4">
        {globalCaps.length > 0 && (
          <div>
            <label className="label" htmlFor="capacity-cap">
              Global cap
            </label>
            <select
              id="capacity-cap"
              className="input"
              value={capId}
              onChange={(e) => {
                setCapId(e.target.value);
                const c = globalCaps.find((x) => x.id === e.target.value);
                if (c) setWindow(formatDurationMs(c.windowMs));
              }}
            >
              {globalCaps.map((c) => (
                <option key={c.id} value={c.id}>
                  {c.operation} ({num(c.limit)} per {formatDurationMs(c.windowMs)})
                </option>
              ))}
            </select>
          </div>
        )}
        <Field id="capacity-rps" label="Downstream capacity (requests/s)" value={capacity} onChange={setCapacity} error={errorOf("capacityPerSecond")?.message} />
        <Field id="capacity-utilisation" label="Target utilisation (%)" value={utilisation} onChange={setUtilisation} error={errorOf("utilisationPct")?.message} />
        <Field id="capacity-window" label="Cap window" value={capWindow} onChange={setWindow} error={errorOf("window")?.message} />
      </div>
      {errors.length > 0 && (
        <ul role="alert" className="text-sm text-red-700" data-testid="capacity-errors">
          {errors.map((e) => (
            <li key={e.field}>
              {e.text}
            </li>
          ))}
        </ul>
      )}
      {plan && (
        <div className="flex flex-col gap-2" data-testid="capacity-result">
          <p className="text-sm" data-testid="capacity-cap-value">
            Cap: <strong>{num(plan.cap)} requests per {formatDurationMs(plan.windowMs)}</strong> (⌊capacity × utilisation × window⌋)
            {cap && (
              <>
                {" "}
                — the live policy caps {cap.operation} at {num(cap.limit)} per {formatDurationMs(cap.windowMs)}
                {cap.windowMs === plan.windowMs ? (cap.limit > plan.cap ? ", more than the downstream should take" : cap.limit < plan.cap ? ", less than it could" : ", the same") : ""}.
              </>
            )}
          </p>
          <div className="overflow-x-auto">
            <table className="table" data-testid="capacity-tiers">
              <caption className="mb-1 text-left text-xs font-semibold uppercase text-slate-500">Guaranteed share when every active tenant contends (weighted fair share)</caption>
              <thead>
                <tr>
                  <th>tier</th>
                  <th className="text-right">weight</th>
                  <th className="text-right">active tenants</th>
                  <th className="text-right">per tenant</th>
                  <th className="text-right">tier total</th>
                  <th className="text-right">share of the cap</th>
                  <th className="text-right" title="When each tier has one contending tenant">one tenant per tier</th>
                </tr>
              </thead>
              <tbody>
                {plan.tiers.map((t) => (
                  <tr key={t.tier}>
                    <td>{t.tier}</td>
                    <td className="text-right tabular-nums">{t.weight}</td>
                    <td className="text-right tabular-nums">{num(t.tenants)}</td>
                    <td className="text-right tabular-nums">{num(t.perTenant)}</td>
                    <td className="text-right tabular-nums">{num(t.tierTotal)}</td>
                    <td className="text-right tabular-nums">{pct(t.share)}</td>
                    <td className="text-right tabular-nums">{num(t.alonePerTier)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p className="text-xs text-slate-600">
            Guarantees are floors per {formatDurationMs(plan.windowMs)}: capacity nobody claims can be borrowed, and idle tenants leave their share to others. {num(plan.unallocated)} unit
            {plan.unallocated === 1 ? "" : "s"} per window are nobody&apos;s guarantee (rounding down).
          </p>
        </div>
      )}
    </div>
  );
}

function Field({ id, label, value, onChange, error }: { id: string; label: string; value: string; onChange: (v: string) => void; error?: string }) {
  return (
    <div>
      <label className="label" htmlFor={id}>
        {label}
      </label>
      <input id={id} className="input" value={value} onChange={(e) => onChange(e.target.value)} aria-invalid={error ? true : undefined} />
    </div>
  );
}
