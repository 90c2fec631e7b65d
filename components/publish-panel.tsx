"use client";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";

type Publish = (input: { note?: string }) => Promise<ActionResult<{ version: number }>>;

/** Publish with an explicit confirmation step that restates what will change. */
export function PublishPanel({ publish, changeCount, blocked }: { publish: Publish; changeCount: number; blocked: string | null }) {
  const [confirming, setConfirming] = useState(false);
  const [note, setNote] = useState("");
  const [result, setResult] = useState<ActionResult<{ version: number }> | null>(null);
  const [pending, start] = useTransition();
  return (
    <div className="card" data-testid="publish-panel">
      {blocked ? (
        <p className="text-sm text-red-700">{blocked}</p>
      ) : !confirming ? (
        <button type="button" className="btn-primary" disabled={changeCount === 0} onClick={() => setConfirming(true)}>
          {changeCount === 0 ? "Nothing to publish" : `Publish ${changeCount} change${changeCount === 1 ? "" : "s"}…`}
        </button>
      ) : (
        <div className="flex flex-col gap-3" role="dialog" aria-label="Confirm publish">
          <p className="text-sm">
            Publish the draft as a new version? Every decision server switches to it within seconds. You can roll back from the history below.
          </p>
          <div>
            <label className="label" htmlFor="publish-note">
              Note (optional)
            </label>
            <input id="publish-note" className="input" maxLength={500} value={note} onChange={(e) => setNote(e.target.value)} placeholder="Why this change" />
          </div>
          <div className="flex gap-2">
            <button
              type="button"
              className="btn-primary"
              disabled={pending}
              onClick={() =>
                start(async () => {
                  const r = await publish({ note: note || undefined });
                  setResult(r);
                  if (r.ok) {
                    setConfirming(false);
                    setNote("");
                  }
                })
              }
            >
              {pending ? "Publishing…" : "Confirm publish"}
            </button>
            <button type="button" className="btn" disabled={pending} onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </div>
        </div>
      )}
      {result && (
        <p role={result.ok ? "status" : "alert"} className={`mt-3 text-sm ${result.ok ? "text-green-700" : "text-red-700"}`} data-testid="publish-result">
          {result.message}
        </p>
      )}
    </div>
  );
}

export function RollbackButton({ version, rollback }: { version: number; rollback: (input: { toVersion: number }) => Promise<ActionResult<{ version: number }>> }) {
  const [pending, start] = useTransition();
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  return (
    <span className="inline-flex items-center gap-2">
      <button
        type="button"
        className="btn whitespace-nowrap"
        disabled={pending}
        onClick={() => {
          if (!window.confirm(`Roll back to version ${version}? Its document is republished as a new version, and the draft is reset to it: unpublished draft changes are discarded.`)) return;
          start(async () => {
            const r = await rollback({ toVersion: version });
            setMessage({ ok: r.ok, text: r.message ?? "" });
          });
        }}
      >
        {pending ? "Rolling back…" : `Roll back to v${version}`}
      </button>
      {message && (
        <span role={message.ok ? "status" : "alert"} className={`text-xs ${message.ok ? "text-green-700" : "text-red-700"}`}>
          {message.text}
        </span>
      )}
    </span>
  );
}

/** "Discard draft": resets the draft to the live version, after a confirmation that says what is lost. */
export function DiscardDraftButton({ discard, changeCount, liveVersion }: { discard: () => Promise<ActionResult<{ version: number }>>; changeCount: number; liveVersion: number }) {
  const [confirming, setConfirming] = useState(false);
  const [result, setResult] = useState<ActionResult<{ version: number }> | null>(null);
  const [pending, start] = useTransition();
  return (
    <div className="mt-3 border-t border-slate-200 pt-3" data-testid="discard-panel">
      {!confirming ? (
        <button type="button" className="btn" disabled={changeCount === 0} onClick={() => setConfirming(true)}>
          Discard draft (reset to live v{liveVersion})…
        </button>
      ) : (
        <div className="flex flex-col gap-2" role="dialog" aria-label="Confirm discard">
          <p className="text-sm text-red-800">
            Discard {changeCount} unpublished change{changeCount === 1 ? "" : "s"}? The draft becomes live v{liveVersion} again. API keys are kept. This cannot be undone.
          </p>
          <div className="flex gap-2">
            <button
              type="button"
              className="btn-danger"
              disabled={pending}
              onClick={() =>
                start(async () => {
                  const r = await discard();
                  setResult(r);
                  if (r.ok) setConfirming(false);
                })
              }
            >
              {pending ? "Discarding…" : "Discard draft"}
            </button>
            <button type="button" className="btn" disabled={pending} onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </div>
        </div>
      )}
      {result && (
        <p role={result.ok ? "status" : "alert"} className={`mt-2 text-sm ${result.ok ? "text-green-700" : "text-red-700"}`} data-testid="discard-result">
          {result.message}
        </p>
      )}
    </div>
  );
}
