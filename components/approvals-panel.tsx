"use client";
/**
 * The Policy page's pending approvals (docs/control-plane.md#approval): what each request would do,
 * why it needs a second person, the diff its requester saw, and Approve / Reject for the other
 * users with publish rights. Its own requester sees why they cannot approve it, and may withdraw it.
 * The page hands it the requests as the admin API shows them (lib/services/approval/approval-view.ts
 * ApprovalView, of which this reads only the fields below).
 *
 * A decision's confirmation is kept by the panel, not by the request: once approved or rejected the
 * request leaves the page's list (the page re-renders), and the confirmation stays in its place.
 */
import { useState, useTransition } from "react";
import { Section } from "./ui";
import type { ActionResult } from "@/lib/errors";

export interface ApprovalPanelView {
  id: string;
  action: string;
  note: string | null;
  reasons: string[];
  diff: { kind: "added" | "changed" | "removed"; text: string }[];
  requestedBy: string;
  requestedAt: string;
}

type Decide = (input: { id: string; decision: "approve" | "reject"; reason?: string }) => Promise<ActionResult<{ state: string }>>;

const KIND_STYLE = { added: "bg-green-100 text-green-800", changed: "bg-amber-100 text-amber-800", removed: "bg-red-100 text-red-800" } as const;

type Result = ActionResult<{ state: string }>;

function Request({ approval, me, canDecide, decide, result, onResult }: { approval: ApprovalPanelView; me: string; canDecide: boolean; decide: Decide; result: Result | undefined; onResult: (r: Result) => void }) {
  const [reason, setReason] = useState("");
  const [pending, start] = useTransition();
  const own = approval.requestedBy === me;
  const act = (decision: "approve" | "reject") =>
    start(async () => {
      onResult(await decide({ id: approval.id, decision, reason: reason.trim() || undefined }));
    });
  return (
    <li className="card flex flex-col gap-2 border-amber-300" data-testid={`approval-${approval.id}`}>
      <p className="text-sm">
        <span className="badge bg-amber-100 text-amber-800">waiting for approval</span> <span className="font-medium">{approval.action}</span>, requested by{" "}
        <span className="font-medium">{approval.requestedBy}</span> at {approval.requestedAt.replace("T", " ").slice(0, 16)} UTC
        {approval.note ? <> — “{approval.note}”</> : null}
      </p>
      <p className="text-sm text-slate-700">Why a second person: {approval.reasons.join("; ")}.</p>
      {approval.diff.length > 0 && (
        <ul className="flex flex-col gap-1 text-sm" data-testid="approval-diff">
          {approval.diff.slice(0, 30).map((l, k) => (
            <li key={k} className="flex items-start gap-2">
              <span className={`badge ${KIND_STYLE[l.kind]} w-20 shrink-0 justify-center`}>{l.kind}</span>
              <span className="min-w-0 flex-1 break-words">{l.text}</span>
            </li>
          ))}
          {approval.diff.length > 30 && <li className="text-slate-500">… and {approval.diff.length - 30} more</li>}
        </ul>
      )}
      {canDecide && (
        <div className="flex flex-col gap-2">
          {own && (
            <p className="text-sm text-slate-700" data-testid="approval-own">
              You requested this: another user with publish rights must approve it. You may withdraw it.
            </p>
          )}
          <div>
            <label className="label" htmlFor={`reason-${approval.id}`}>
              Reason {own ? "(optional)" : "(required to reject)"}
            </label>
            <input id={`reason-${approval.id}`} className="input" maxLength={500} value={reason} onChange={(e) => setReason(e.target.value)} placeholder="Why" />
          </div>
          <div className="flex flex-wrap gap-2">
            {!own && (
              <button type="button" className="btn-primary" disabled={pending} onClick={() => act("approve")}>
                {pending ? "Working…" : "Approve"}
              </button>
            )}
            <button type="button" className="btn" disabled={pending || (!own && reason.trim() === "")} onClick={() => act("reject")}>
              {own ? "Withdraw" : "Reject"}
            </button>
          </div>
        </div>
      )}
      {result && <ResultLine result={result} />}
    </li>
  );
}

function ResultLine({ result }: { result: Result }) {
  return (
    <p role={result.ok ? "status" : "alert"} className={`text-sm ${result.ok ? "text-green-700" : "text-red-700"}`} data-testid="approval-result">
      {result.message}
    </p>
  );
}

/**
 * The "Waiting for approval" section: the pending requests, and the confirmations of those decided
 * here (which the page no longer lists). Renders nothing when there are neither.
 */
export function ApprovalsPanel({ approvals, me, canDecide, decide }: { approvals: ApprovalPanelView[]; me: string; canDecide: boolean; decide: Decide }) {
  const [results, setResults] = useState<ReadonlyMap<string, Result>>(new Map());
  const listed = new Set(approvals.map((a) => a.id));
  const decided = [...results].filter(([id, r]) => r.ok && !listed.has(id));
  if (approvals.length === 0 && decided.length === 0) return null;
  return (
    <Section title="Waiting for approval" description="The live version's approval rule wants a second person for these changes: nothing is published until another user with publish rights approves.">
      {decided.length > 0 && (
        <div className="card mb-3 flex flex-col gap-1 border-green-300" data-testid="approvals-decided">
          {decided.map(([id, r]) => (
            <ResultLine key={id} result={r} />
          ))}
        </div>
      )}
      {approvals.length > 0 && (
        <ul className="flex flex-col gap-3" data-testid="approvals-panel">
          {approvals.map((a) => (
            <Request key={a.id} approval={a} me={me} canDecide={canDecide} decide={decide} result={results.get(a.id)} onResult={(r) => setResults((m) => new Map(m).set(a.id, r))} />
          ))}
        </ul>
      )}
    </Section>
  );
}
