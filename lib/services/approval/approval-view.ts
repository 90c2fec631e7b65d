/**
 * An approval request as the CLI (`sluice approvals list`), the admin API and the Policy page show
 * it: what it would do, why it needs a second person, the diff its requester saw, and its decision.
 */
import type { ApprovalKind, ApprovalRecord, ApprovalState, StoredDiffLine } from "../../db/approval-repo";

export interface ApprovalView {
  id: string;
  kind: ApprovalKind;
  state: ApprovalState;
  /** What approving does, in words: `publish the draft to everyone as v4`, `start rollout ro_…`, `move rollout ro_… to step 3`. */
  action: string;
  liveVersion: number;
  rollout: string | null;
  step: number | null;
  note: string | null;
  reasons: string[];
  reachPercent: number;
  diff: StoredDiffLine[];
  requestedBy: string;
  requestedAt: string;
  decidedBy: string | null;
  decidedAt: string | null;
  decisionReason: string | null;
}

function actionOf(r: ApprovalRecord): string {
  if (r.kind === "publish") return `publish the draft to everyone as v${r.liveVersion + 1}`;
  if (r.kind === "rollout") return `start rollout ${r.rolloutId ?? "?"} of the draft as v${r.liveVersion + 1}`;
  return `move rollout ${r.rolloutId ?? "?"} to step ${(r.step ?? 0) + 1}`;
}

export function describeApproval(r: ApprovalRecord): ApprovalView {
  return {
    id: r.id,
    kind: r.kind,
    state: r.state,
    action: actionOf(r),
    liveVersion: r.liveVersion,
    rollout: r.rolloutId,
    step: r.step,
    note: r.note,
    reasons: [...r.reasons],
    reachPercent: r.reachPercent,
    diff: r.diff,
    requestedBy: r.requestedBy,
    requestedAt: r.requestedAt.toISOString(),
    decidedBy: r.decidedBy,
    decidedAt: r.decidedAt?.toISOString() ?? null,
    decisionReason: r.decisionReason,
  };
}

/** The lines `sluice publish` prints when a publish waits for approval: what, why, and how to approve. */
export function formatApprovalPending(v: ApprovalView): string {
  return [
    `Approval required: nothing was published. Request ${v.id} (${v.action}) waits for a second person, because ${v.reasons.join("; ")}.`,
    `  Another user with publish rights approves it with \`sluice approvals approve ${v.id}\` (or on the Policy page),`,
    `  or rejects it with \`sluice approvals reject ${v.id} --reason "…"\`.`,
  ].join("\n");
}

/** `sluice approvals list`, one request as lines. */
export function formatApproval(v: ApprovalView): string {
  const lines = [
    `${v.id}  ${v.state}  ${v.action} — requested by ${v.requestedBy} at ${v.requestedAt}${v.note ? ` ("${v.note}")` : ""}`,
    `  why: ${v.reasons.join("; ")}`,
    ...v.diff.slice(0, 20).map((l) => `  ${l.kind.padEnd(7)} ${l.text}`),
  ];
  if (v.diff.length > 20) lines.push(`  … and ${v.diff.length - 20} more change(s)`);
  if (v.decidedBy || v.decisionReason) lines.push(`  ${v.state} by ${v.decidedBy ?? "?"}${v.decidedAt ? ` at ${v.decidedAt}` : ""}${v.decisionReason ? `: ${v.decisionReason}` : ""}`);
  return lines.join("\n");
}
