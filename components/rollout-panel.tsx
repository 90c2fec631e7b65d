"use client";
/**
 * The Policy page's guarded rollout panel (docs/control-plane.md#guarded-rollout), for roles that
 * may publish: start a rollout of the draft (canaries, then steps), and for the running one its
 * step, cohort, guardrail and last check, with promote / pause / abort. The page hands it the
 * rollout as the admin API shows it (lib/services/rollout/rollout-view.ts RolloutView, of which
 * this reads only the fields below).
 */
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";

export interface RolloutPanelView {
  id: string;
  state: "running" | "paused" | "aborted" | "rolled-back" | "completed";
  liveVersion: number;
  candidateVersion: number;
  step: number;
  stepLabel: string;
  steps: { label: string }[];
  bakeEndsAt: string | null;
  cohort: { canaries: string[]; tenants: number; of: number; members: string[] };
  guardrails: { maxDenyShareIncrease: number; maxTenantDenyShareIncrease: number; pauseOnly: boolean };
  lastCheck: { minute: string; cohort: { decisions: number; share: number }; control: { decisions: number; share: number }; marginPoints: number; verdict: string } | null;
  reason: string | null;
  endedAt: string | null;
}

type Start = (input: { canaries: string; steps: string }) => Promise<ActionResult<{ id: string }>>;
type Act = (input: { action: "promote" | "pause" | "abort" }) => Promise<ActionResult<{ state: string }>>;

const STATE_STYLE: Record<RolloutPanelView["state"], string> = {
  running: "bg-indigo-100 text-indigo-800",
  paused: "bg-amber-100 text-amber-800",
  aborted: "bg-slate-200 text-slate-700",
  "rolled-back": "bg-red-100 text-red-800",
  completed: "bg-green-100 text-green-800",
};

const pct = (share: number) => `${(share * 100).toFixed(1)}%`;
const utc = (iso: string) => iso.replace("T", " ").slice(0, 16) + " UTC";

export function RolloutPanel({ rollout, start, act, changeCount }: { rollout: RolloutPanelView | null; start: Start; act: Act; changeCount: number }) {
  const active = rollout !== null && (rollout.state === "running" || rollout.state === "paused");
  const [canaries, setCanaries] = useState("");
  const [steps, setSteps] = useState("10%:1h, 100%");
  const [result, setResult] = useState<ActionResult<unknown> | null>(null);
  const [pending, run] = useTransition();
  const go = (fn: () => Promise<ActionResult<unknown>>) => run(async () => setResult(await fn()));

  return (
    <div className="card mt-3 flex flex-col gap-3" data-testid="rollout-panel">
      <div className="flex items-center justify-between gap-2">
        <h3 className="text-sm font-medium">Guarded rollout</h3>
        {rollout && (
          <span className={`badge ${STATE_STYLE[rollout.state]}`} data-testid="rollout-state">
            {rollout.state}
          </span>
        )}
      </div>
      {rollout && (
        <div className="flex flex-col gap-2 text-sm" data-testid="rollout-status">
          <p>
            v{rollout.candidateVersion} to the cohort, v{rollout.liveVersion} for everyone else. {active ? rollout.stepLabel.replace(/^step/, "Step") : `Ended ${rollout.endedAt ? utc(rollout.endedAt) : ""}`}
            {active && rollout.bakeEndsAt ? `, next step after ${utc(rollout.bakeEndsAt)}` : ""}.
          </p>
          <ol className="flex flex-wrap gap-1 text-xs" aria-label="Steps">
            {rollout.steps.map((s, i) => (
              <li key={i} className={`badge ${active && i === rollout.step ? "bg-indigo-600 text-white" : i < rollout.step || rollout.state === "completed" ? "bg-slate-200 text-slate-700" : "bg-white text-slate-600 ring-1 ring-slate-300"}`}>
                {s.label}
              </li>
            ))}
          </ol>
          {active && (
            <p className="break-words text-slate-700">
              Cohort: {rollout.cohort.tenants} of {rollout.cohort.of} tenants
              {rollout.cohort.members.length > 0 ? ` (${rollout.cohort.members.join(", ")}${rollout.cohort.tenants > rollout.cohort.members.length ? ", …" : ""})` : ""}.
            </p>
          )}
          <p className="text-slate-700">
            Guardrail: the cohort&apos;s 429 share at most {rollout.guardrails.maxDenyShareIncrease} points above the control&apos;s per minute, any one tenant&apos;s at most{" "}
            {rollout.guardrails.maxTenantDenyShareIncrease} points above its own before the rollout, store errors and reject-path latency as the alerts define them; on a breach{" "}
            {rollout.guardrails.pauseOnly ? "pause" : "pause and roll the cohort back"}.
          </p>
          {rollout.lastCheck && (
            <p className="text-slate-700" data-testid="rollout-last-check">
              Last check ({utc(rollout.lastCheck.minute)}): cohort {pct(rollout.lastCheck.cohort.share)} of {rollout.lastCheck.cohort.decisions}, control {pct(rollout.lastCheck.control.share)} of{" "}
              {rollout.lastCheck.control.decisions}, margin {rollout.lastCheck.marginPoints.toFixed(1)} points — {rollout.lastCheck.verdict.replaceAll("_", " ")}.
            </p>
          )}
          {rollout.reason && (
            <p className={`break-words ${rollout.state === "rolled-back" ? "text-red-800" : "text-slate-700"}`} data-testid="rollout-reason">
              {rollout.state === "completed" ? "Completed" : "Why"}: {rollout.reason}
            </p>
          )}
          {active && (
            <div className="flex flex-wrap gap-2">
              <button type="button" className="btn-primary" disabled={pending} onClick={() => go(() => act({ action: "promote" }))}>
                {rollout.step >= rollout.steps.length - 2 ? "Promote to everyone" : rollout.state === "paused" ? "Resume: next step" : "Promote: next step"}
              </button>
              {rollout.state === "running" && (
                <button type="button" className="btn" disabled={pending} onClick={() => go(() => act({ action: "pause" }))}>
                  Pause
                </button>
              )}
              <button
                type="button"
                className="btn-danger"
                disabled={pending}
                onClick={() => {
                  if (window.confirm(`Abort rollout ${rollout.id}? Every tenant goes back to v${rollout.liveVersion}; the draft stays as it is.`)) go(() => act({ action: "abort" }));
                }}
              >
                Abort
              </button>
            </div>
          )}
        </div>
      )}
      {!active && (
        <form
          className="flex flex-col gap-2 border-t border-slate-200 pt-3"
          aria-label="Start a rollout"
          onSubmit={(e) => {
            e.preventDefault();
            go(() => start({ canaries, steps }));
          }}
        >
          <p className="text-sm text-slate-700">Publish the draft to a few tenants first, watched against everyone else, instead of to everyone at once.</p>
          <div>
            <label className="label" htmlFor="rollout-canaries">
              Canary tenants (slugs, comma-separated; optional)
            </label>
            <input id="rollout-canaries" className="input" value={canaries} onChange={(e) => setCanaries(e.target.value)} placeholder="acme, globex" />
          </div>
          <div>
            <label className="label" htmlFor="rollout-steps">
              Steps (percent of tenants : bake time, ending at 100%)
            </label>
            <input id="rollout-steps" className="input font-mono" value={steps} onChange={(e) => setSteps(e.target.value)} />
          </div>
          <button type="submit" className="btn-primary self-start" disabled={pending || changeCount === 0}>
            {changeCount === 0 ? "Nothing to roll out" : pending ? "Starting…" : "Start rollout"}
          </button>
        </form>
      )}
      {result && (
        <p role={result.ok ? "status" : "alert"} className={`text-sm ${result.ok ? "text-green-700" : "text-red-700"}`} data-testid="rollout-result">
          {result.message}
        </p>
      )}
    </div>
  );
}
