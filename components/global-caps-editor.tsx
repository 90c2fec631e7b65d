"use client";
import { plainMessage } from "@/lib/policy/plain-messages";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";
import { globalCapSchema } from "@/lib/policy/policy-file";
import { SHARES } from "@/lib/policy/types";
import { describeGlobalCap } from "./limit-sentence";

export interface CapDraft {
  operation: string;
  limit?: number;
  window: string;
  share: string;
}

export function GlobalCapsEditor({
  initial,
  operations,
  canEdit,
  save,
}: {
  initial: CapDraft[];
  operations: string[];
  canEdit: boolean;
  save: (caps: CapDraft[]) => Promise<ActionResult>;
}) {
  const [caps, setCaps] = useState(initial);
  const [result, setResult] = useState<ActionResult | null>(null);
  const [pending, start] = useTransition();
  const errors = caps.map((c) => {
    const r = globalCapSchema.safeParse(c);
    const e: Record<string, string> = {};
    if (!r.success) for (const i of r.error.issues) e[String(i.path[0])] ??= plainMessage(i.message);
    return e;
  });
  const invalid = errors.some((e) => Object.keys(e).length > 0);
  const update = (i: number, patch: Partial<CapDraft>) => setCaps((cs) => cs.map((c, j) => (j === i ? { ...c, ...patch } : c)));
  return (
    <div className="flex flex-col gap-2" data-testid="global-caps">
      {caps.length === 0 && (
        <p className="rounded-lg border border-dashed border-slate-300 bg-white px-4 py-3 text-sm text-slate-600">
          No global cap. Add one to protect an expensive operation across all tenants (for example 50 exports per minute in total).
        </p>
      )}
      {caps.map((c, i) => (
        <fieldset key={i} disabled={!canEdit} className="card grid grid-cols-2 items-end gap-3 md:grid-cols-5">
          <div>
            <label className="label" htmlFor={`cap${i}-op`}>
              Operation
            </label>
            <select id={`cap${i}-op`} className="input" value={c.operation} onChange={(e) => update(i, { operation: e.target.value })}>
              {["*", ...operations].map((o) => (
                <option key={o}>{o}</option>
              ))}
            </select>
          </div>
          <div>
            <label className="label" htmlFor={`cap${i}-limit`}>
              Limit
            </label>
            <input id={`cap${i}-limit`} type="number" min={1} className="input" aria-invalid={errors[i].limit ? true : undefined} value={c.limit ?? ""} onChange={(e) => update(i, { limit: e.target.value === "" ? undefined : Number(e.target.value) })} />
            {errors[i].limit && <p className="field-error">{errors[i].limit}</p>}
          </div>
          <div>
            <label className="label" htmlFor={`cap${i}-window`}>
              Window
            </label>
            <input id={`cap${i}-window`} className="input" aria-invalid={errors[i].window ? true : undefined} value={c.window} onChange={(e) => update(i, { window: e.target.value })} />
            {errors[i].window && <p className="field-error">{errors[i].window}</p>}
          </div>
          <div>
            <label className="label" htmlFor={`cap${i}-share`}>
              Share
            </label>
            <select id={`cap${i}-share`} className="input" value={c.share} onChange={(e) => update(i, { share: e.target.value })}>
              {SHARES.map((s) => (
                <option key={s}>{s}</option>
              ))}
            </select>
          </div>
          <button type="button" className="btn" onClick={() => setCaps((cs) => cs.filter((_, j) => j !== i))}>
            Remove
          </button>
          <p className="col-span-full text-sm text-slate-600">{describeGlobalCap(c)}</p>
        </fieldset>
      ))}
      {canEdit && (
        <div className="flex items-center gap-3">
          <button type="button" className="btn" onClick={() => setCaps((cs) => [...cs, { operation: operations[0] ?? "*", limit: 50, window: "1m", share: "weighted" }])}>
            + Add global cap
          </button>
          <button
            type="button"
            className="btn-primary"
            disabled={pending || invalid}
            onClick={() =>
              start(async () => {
                setResult(await save(caps));
              })
            }
          >
            {pending ? "Saving…" : "Save global caps"}
          </button>
          {result && (
            <span role={result.ok ? "status" : "alert"} className={`text-sm ${result.ok ? "text-green-700" : "text-red-600"}`}>
              {result.message}
            </span>
          )}
        </div>
      )}
    </div>
  );
}
