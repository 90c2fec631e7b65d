/**
 * The approval gate (docs/control-plane.md#approval), called by every path that makes a change
 * reach tenants — publish (lib/services/policy/publish-policy.ts), a rollout's start and each of its steps
 * (lib/services/rollout/) — inside their transaction, under the policy lock. Under the live
 * version's `approval` rule it either lets the change go, or records a request for a second person
 * (with the diff the requester saw) and tells the caller to stop: nothing is published then.
 */
import { writeAudit } from "../../db/audit";
import type { Tx } from "../../db/client";
import { findPendingApproval, toApprovalRecord, type ApprovalKind, type ApprovalRecord } from "../../db/approval-repo";
import { newId } from "../../db/policy-repo";
import { approvalVerdict, blastRadius } from "../../policy/blast-radius";
import type { CompiledPolicy, CompiledPolicyBody } from "../../policy/compiled";
import { diffPolicies } from "../../policy/policy-diff";
import type { Role } from "../../policy/types";
import { describeApproval, type ApprovalView } from "./approval-view";

/** Who asks: the audit actor and, where known, their role (an admin skips approval only under `adminBypass`). */
export interface Caller {
  actor: string;
  role: Role | null;
}

export interface GateInput {
  kind: ApprovalKind;
  /** The live version: its `approval` rule governs, its body is what the change is measured against. */
  live: CompiledPolicy;
  candidate: CompiledPolicyBody;
  /** policyChecksum of the draft as compiled, before publish stamps (which carry the time). */
  draftChecksum: string;
  /** A rollout step's tenants; null for a publish to everyone. */
  cohort: ReadonlySet<string> | null;
  caller: Caller;
  note: string | null;
  rolloutId?: string;
  step?: number;
  spec?: unknown;
  nowMs: number;
}

const sameRequest = (r: ApprovalRecord, input: GateInput) =>
  r.kind === input.kind &&
  r.requestedBy === input.caller.actor &&
  r.liveVersion === input.live.version &&
  r.draftChecksum === input.draftChecksum &&
  (r.rolloutId ?? null) === (input.rolloutId ?? null) &&
  (r.step ?? null) === (input.step ?? null);

/**
 * null: the change may go ahead. Otherwise the pending request: the one just recorded, or the same
 * request already waiting (asking twice does not queue twice). A new request supersedes a pending
 * one about something else: at most one waits at a time, and it is about the current draft.
 */
export async function requireApproval(tx: Tx, input: GateInput): Promise<ApprovalView | null> {
  const verdict = approvalVerdict(input.live.approval, blastRadius(input.live, input.candidate), { cohort: input.cohort, adminCaller: input.caller.role === "admin" });
  if (!verdict.required) return null;
  const pending = await findPendingApproval(tx);
  if (pending && sameRequest(pending, input)) return describeApproval(pending);
  const at = new Date(input.nowMs);
  if (pending) {
    await tx.approvalRequest.update({ where: { id: pending.id }, data: { state: "superseded", decidedAt: at, decisionReason: `superseded by a new request from ${input.caller.actor}` } });
    await writeAudit(tx, { actor: input.caller.actor, action: "approval.supersede", entity: "approval", entityId: pending.id, before: { state: "pending" }, after: { state: "superseded" } });
  }
  const diff = diffPolicies(input.live, input.candidate);
  const row = await tx.approvalRequest.create({
    data: {
      id: newId("approvalRequest"),
      kind: input.kind,
      state: "pending",
      liveVersion: input.live.version,
      draftChecksum: input.draftChecksum,
      rolloutId: input.rolloutId ?? null,
      step: input.step ?? null,
      ...(input.spec !== undefined ? { spec: JSON.parse(JSON.stringify(input.spec)) } : {}),
      note: input.note,
      diff: diff.map((l) => ({ ...l })),
      reasons: verdict.reasons,
      reachPercent: verdict.reachPercent,
      requestedBy: input.caller.actor,
      requestedAt: at,
    },
  });
  const request = toApprovalRecord(row);
  await writeAudit(tx, {
    actor: input.caller.actor,
    action: "approval.request",
    entity: "approval",
    entityId: request.id,
    before: { liveVersion: input.live.version },
    after: { kind: input.kind, draftChecksum: input.draftChecksum, rollout: input.rolloutId ?? null, step: input.step ?? null, reasons: verdict.reasons, diff: diff.map((l) => l.text) },
  });
  return describeApproval(request);
}
