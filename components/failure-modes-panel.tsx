"use client";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";
import { FAILURE_MODES } from "@/lib/policy/types";

export interface LiveFailureModes {
  version: number;
  default: string;
  /** Per live operation: its own mode, or null when it follows the default; and the effective one. */
  operations: { name: string; own: string | null; effective: string }[];
}

type Apply = (input: unknown) => Promise<ActionResult<{ version: number }>>;

const MEANING: Record<string, string> = {
  open: "admit (count nothing)",
  closed: "refuse with 503",
  local: "count in the decision server's memory, its share of the limit",
};

/**
 * The live failure modes, the default and every operation's on one form; an SRE applies a change to
 * the live policy at once (a version that changes only failure modes), without the draft's other
 * pending changes.
 */
export function FailureModesPanel({ live, canApply, apply }: { live: LiveFailureModes; canApply: boolean; apply: Apply }) {
  const [def, setDef] = useState(live.default);
  const [own, setOwn] = useState<Record<string, string>>(Object.fromEntries(live.operations.map((o) => [o.name, o.own ?? ""])));
  const [confirming, setConfirming] = useState(false);
  const [result, setResult] = useState<ActionResult<{ version: number }> | null>(null);
  const [pending, start] = useTransition();
  const changedOps = live.operations.filter((o) => (own[o.name] || null) !== o.own);
  const dirty = def !== live.default || changedOps.length > 0;
  const effective = (name: string) => own[name] || def;

  return (
    <form
      id="failure-modes"
      className="card flex flex-col gap-3"
      data-testid="failure-modes"
      onSubmit={(e) => {
        e.preventDefault();
        if (!confirming) return setConfirming(true);
        start(async () => {
          const r = await apply({
            ...(def !== live.default ? { default: def } : {}),
            operations: changedOps.map((o) => ({ name: o.name, failureMode: own[o.name] || null })),
          });
          setResult(r);
          setConfirming(false);
        });
      }}
    >
      <p className="text-sm text-slate-700">
        What a decision does when Redis cannot answer, as live v{live.version} enforces it. {canApply ? "Applying puts the change into effect at once, as a new version that changes only failure modes; the draft's other changes stay unpublished." : "Only the sre and admin roles may change failure modes."}
      </p>
      <div className="overflow-x-auto">
        <table className="table">
          <thead>
            <tr>
              <th>Operation</th>
              <th>Failure mode</th>
              <th>When Redis cannot answer</th>
            </tr>
          </thead>
          <tbody>
            <tr>
              <td className="font-medium">Default (operations without their own)</td>
              <td>
                <label className="sr-only" htmlFor="fm-default">
                  Default failure mode
                </label>
                <select id="fm-default" className="input w-40" value={def} disabled={!canApply || pending} onChange={(e) => setDef(e.target.value)}>
                  {FAILURE_MODES.map((m) => (
                    <option key={m} value={m}>
                      {m}
                    </option>
                  ))}
                </select>
              </td>
              <td className="text-sm text-slate-600">{MEANING[def]}</td>
            </tr>
            {live.operations.map((o) => (
              <tr key={o.name}>
                <td className="font-mono text-xs">{o.name}</td>
                <td>
                  <label className="sr-only" htmlFor={`fm-${o.name}`}>
                    Failure mode of {o.name}
                  </label>
                  <select id={`fm-${o.name}`} className="input w-40" value={own[o.name]} disabled={!canApply || pending} onChange={(e) => setOwn({ ...own, [o.name]: e.target.value })}>
                    <option value="">default ({def})</option>
                    {FAILURE_MODES.map((m) => (
                      <option key={m} value={m}>
                        {m}
                      </option>
                    ))}
                  </select>
                </td>
                <td className="text-sm text-slate-600">{MEANING[effective(o.name)]}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {canApply && (
        <div className="flex flex-wrap items-center gap-2">
          {confirming ? (
            <>
              <span className="text-sm text-amber-900" role="alert">
                Apply to the live policy now? Every decision server switches within seconds.
              </span>
              <button type="submit" className="btn-primary" disabled={pending}>
                {pending ? "Applying…" : "Confirm: apply live"}
              </button>
              <button type="button" className="btn" disabled={pending} onClick={() => setConfirming(false)}>
                Cancel
              </button>
            </>
          ) : (
            <button type="submit" className="btn-primary" disabled={!dirty || pending}>
              Apply to live…
            </button>
          )}
        </div>
      )}
      {result && (
        <p role={result.ok ? "status" : "alert"} className={`text-sm ${result.ok ? "text-green-700" : "text-red-700"}`} data-testid="failure-modes-result">
          {result.message}
        </p>
      )}
    </form>
  );
}
