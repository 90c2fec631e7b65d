"use client";
/**
 * The replay panel (on /policy beside the draft's diff, and on /simulator): the last N days of
 * recorded per-minute, per-key usage sent again through the live version and through the draft,
 * by the engine's own code (lib/services/justify/replay.ts). It says what the replay cannot know.
 */
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";
import { ARRIVAL_MODEL, DEFAULT_REPLAY_DAYS, fieldErrors, MAX_REPLAY_DAYS, replayInputSchema } from "@/lib/services/justify/justify-input";
import type { DraftReplay } from "@/lib/services/justify/replay-draft";
import type { ReplayChange } from "@/lib/services/justify/replay";
import { day, deltaPp, num, pct } from "@/components/format-numbers";

type Replay = (input: { days: number }) => Promise<ActionResult<DraftReplay>>;

export function ReplayPanel({ replay, tenant }: { replay: Replay; /** Highlight one tenant (the simulator's). */ tenant?: string | null }) {
  const [days, setDays] = useState(String(DEFAULT_REPLAY_DAYS));
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<DraftReplay | null>(null);
  const [pending, start] = useTransition();

  const run = () => {
    const parsed = replayInputSchema.safeParse({ days });
    if (!parsed.success) {
      setError(fieldErrors(parsed.error).map((e) => e.text).join("; "));
      return;
    }
    setError(null);
    start(async () => {
      const r = await replay({ days: parsed.data.days });
      if (r.ok && r.data) setResult(r.data);
      else if (!r.ok) {
        setResult(null);
        setError(r.message);
      }
    });
  };

  return (
    <div className="card mb-6 flex flex-col gap-3" data-testid="replay-panel">
      <div>
        <h3 className="text-sm font-semibold text-slate-800">Replay recorded traffic through the draft</h3>
        <p className="text-sm text-slate-600">
          The last days of recorded per-minute, per-key usage, sent again request by request through the live version and through the draft with the decision engine&apos;s own
          algorithms: which tiers, tenants and keys the draft would limit, and which tenants would run out of their monthly quota.
        </p>
      </div>
      <form
        className="flex flex-wrap items-end gap-2"
        onSubmit={(e) => {
          e.preventDefault();
          run();
        }}
      >
        <div>
          <label className="label" htmlFor="replay-days">
            Days to replay (1–{MAX_REPLAY_DAYS})
          </label>
          <input
            id="replay-days"
            name="days"
            className="input w-24"
            inputMode="numeric"
            value={days}
            aria-invalid={error?.startsWith("days") ? true : undefined}
            aria-describedby={error ? "replay-error" : undefined}
            onChange={(e) => setDays(e.target.value)}
          />
        </div>
        <button type="submit" className="btn-primary" disabled={pending}>
          {pending ? "Replaying…" : "Replay"}
        </button>
      </form>
      {error && (
        <p id="replay-error" role="alert" className="text-sm text-red-700" data-testid="replay-error">
          {error}
        </p>
      )}
      <details className="rounded border border-slate-200 bg-slate-50 p-2 text-xs text-slate-700" data-testid="replay-limits" open={result === null}>
        <summary className="cursor-pointer font-medium">What the replay cannot know, and how it models it</summary>
        <ul className="mt-1 list-disc pl-5">
          <li>{ARRIVAL_MODEL}</li>
          <li>Client addresses are not recorded, so limits on scope ip are not replayed; concurrency limits depend on how long requests take and are not replayed either.</li>
          <li>Monthly quotas are projected, not replayed: month-to-date use at its rate so far (the tenant page&apos;s projection), the draft&apos;s use scaled by what it admits of the replayed traffic against the live version.</li>
          <li>A denied request is replayed as demand: a client that retried after a 429 counts again.</li>
        </ul>
      </details>
      {result && <ReplayResultView r={result} tenant={tenant ?? null} />}
    </div>
  );
}

function ChangeList({ title, rows, testId, empty }: { title: string; rows: ReplayChange[]; testId: string; empty: string }) {
  return (
    <div data-testid={testId}>
      <h4 className="mb-1 text-xs font-semibold uppercase text-slate-500">
        {title} ({rows.length})
      </h4>
      {rows.length === 0 ? (
        <p className="text-sm text-slate-500">{empty}</p>
      ) : (
        <ul className="text-sm">
          {rows.slice(0, 10).map((c) => (
            <li key={c.subject}>
              <span className="font-mono text-xs">{c.subject}</span> <span className="text-slate-500">({c.tier})</span>: {num(c.liveLimited)} → {num(c.draftLimited)} 429s of {num(c.requests)}
            </li>
          ))}
          {rows.length > 10 && <li className="text-slate-500">and {rows.length - 10} more</li>}
        </ul>
      )}
    </div>
  );
}

function ReplayResultView({ r, tenant }: { r: DraftReplay; tenant: string | null }) {
  const c = r.comparison;
  const recorded = new Map(r.recorded.map((x) => [x.tier, x]));
  const changedTenants = c.tenants
    .filter((t) => t.liveLimited > 0 || t.draftLimited > 0 || t.subject === tenant)
    .sort((a, b) => Math.abs(b.draftLimited - b.liveLimited) - Math.abs(a.draftLimited - a.liveLimited) || a.subject.localeCompare(b.subject))
    .slice(0, 20);
  return (
    <div className="flex flex-col gap-4" data-testid="replay-result">
      <p className="text-sm" data-testid="replay-summary">
        {num(r.requests)} requests recorded from {day(r.fromMs)} to {day(r.toMs)} replayed through live v{r.liveVersion} and the draft
        {r.truncated ? " (the most recent that fit the replay budget)" : ""}.
      </p>
      <div className="overflow-x-auto">
        <table className="table" data-testid="replay-tiers">
          <caption className="mb-1 text-left text-xs font-semibold uppercase text-slate-500">Predicted 429 share per tier</caption>
          <thead>
            <tr>
              <th>tier</th>
              <th className="text-right">requests</th>
              <th className="text-right">live</th>
              <th className="text-right">draft</th>
              <th className="text-right">change</th>
              <th className="text-right" title="What the live version really answered in those minutes (any denial): how far the model is from reality">
                recorded
              </th>
            </tr>
          </thead>
          <tbody>
            {c.tiers.map((t) => {
              const rec = recorded.get(t.tier);
              return (
                <tr key={t.tier}>
                  <td>{t.tier}</td>
                  <td className="text-right tabular-nums">{num(t.requests)}</td>
                  <td className="text-right tabular-nums">{pct(t.liveShare)}</td>
                  <td className="text-right tabular-nums">{pct(t.draftShare)}</td>
                  <td className="text-right tabular-nums">{deltaPp(t.liveShare, t.draftShare)}</td>
                  <td className="text-right tabular-nums text-slate-500">{rec && rec.requests > 0 ? pct(rec.denied / rec.requests) : "—"}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <div className="overflow-x-auto">
        <table className="table" data-testid="replay-tenants">
          <caption className="mb-1 text-left text-xs font-semibold uppercase text-slate-500">Predicted 429 share per tenant (tenants with 429s under either version)</caption>
          <thead>
            <tr>
              <th>tenant</th>
              <th>tier</th>
              <th className="text-right">requests</th>
              <th className="text-right">live</th>
              <th className="text-right">draft</th>
              <th className="text-right">change</th>
            </tr>
          </thead>
          <tbody>
            {changedTenants.length === 0 ? (
              <tr>
                <td colSpan={6} className="text-slate-500">
                  No tenant gets a 429 under either version.
                </td>
              </tr>
            ) : (
              changedTenants.map((t) => (
                <tr key={t.subject} className={t.subject === tenant ? "bg-indigo-50" : undefined}>
                  <td>{t.subject}</td>
                  <td>{t.tier}</td>
                  <td className="text-right tabular-nums">{num(t.requests)}</td>
                  <td className="text-right tabular-nums">{pct(t.liveShare)}</td>
                  <td className="text-right tabular-nums">{pct(t.draftShare)}</td>
                  <td className="text-right tabular-nums">{deltaPp(t.liveShare, t.draftShare)}</td>
                </tr>
              ))
            )}
          </tbody>
        </table>
      </div>
      <div className="grid grid-cols-1 gap-3 md:grid-cols-2">
        <ChangeList title="Tenants newly limited" rows={c.newlyLimitedTenants} testId="replay-newly-limited-tenants" empty="None." />
        <ChangeList title="Tenants freed" rows={c.freedTenants} testId="replay-freed-tenants" empty="None." />
        <ChangeList title="Keys newly limited" rows={c.newlyLimitedKeys} testId="replay-newly-limited-keys" empty="None." />
        <ChangeList title="Keys freed" rows={c.freedKeys} testId="replay-freed-keys" empty="None." />
      </div>
      <div className="overflow-x-auto" data-testid="replay-quotas">
        <h4 className="mb-1 text-xs font-semibold uppercase text-slate-500">Monthly quotas that would now run out this month</h4>
        {r.quotas.newlyRunningOut.length === 0 ? (
          <p className="text-sm text-slate-500">No tenant runs out of a monthly quota earlier under the draft than under the live version.</p>
        ) : (
          <table className="table">
            <thead>
              <tr>
                <th>tenant</th>
                <th>operation</th>
                <th>live runs out</th>
                <th>draft runs out</th>
              </tr>
            </thead>
            <tbody>
              {r.quotas.newlyRunningOut.map((q) => (
                <tr key={`${q.tenant}/${q.operation}`}>
                  <td>{q.tenant}</td>
                  <td>{q.operation}</td>
                  <td>{q.liveRunsOutOn ?? "not this month"}</td>
                  <td className="text-red-700">{q.draftRunsOutOn}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
      {r.notes.length > 0 && (
        <ul className="list-disc pl-5 text-xs text-slate-600" data-testid="replay-notes">
          {r.notes.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
