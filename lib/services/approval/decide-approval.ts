/**
 * `sluice approvals list|approve|reject`, `GET /api/v1/policy/approvals`,
 * `POST /api/v1/policy/approvals/{id}/approve|reject` and the Policy page's buttons
 * (docs/control-plane.md#approval): a second person with publish rights decides a pending request.
 *
 * The same person cannot approve their own request (nor, for a rollout's step, a step of their
 * own rollout), whatever their role or token: the check is here, below every surface. Approving
 * does what was requested, in the same transaction under the policy lock — publish the draft, start
 * the rollout, or move it to the step — for exactly the draft whose diff the request shows; if the
 * draft or the live version changed since, it is refused and nothing is published. Both decisions
 * are audited with that diff.
 */
import { z } from "zod";
import { writeAudit } from "../../db/audit";
import type { Tx } from "../../db/client";
import { findApproval, listApprovalRecords, type ApprovalRecord } from "../../db/approval-repo";
import { APPROVAL_STATES } from "../../policy/approval";
import { lockPolicy } from "../../db/policy-repo";
import { findActiveRollout } from "../../db/rollout-repo";
import { ServiceError } from "../errors";
import { publishDraft, type PublishDeps } from "../policy/publish-policy";
import { startRolloutLocked } from "../rollout/start-rollout";
import { advance } from "../rollout/transitions";
import { describeApproval, type ApprovalView } from "./approval-view";

/** GET /api/v1/policy/approvals's query. */
export const approvalListQuerySchema = z.strictObject({ state: z.enum(APPROVAL_STATES, `expected one of ${APPROVAL_STATES.join(", ")}`).optional() });
/** The body of POST …/approve (reason optional) and …/reject (reason required). */
export const approveBodySchema = z.strictObject({ reason: z.string().trim().max(500, "expected at most 500 characters").optional() });
export const rejectBodySchema = z.strictObject({ reason: z.string().trim().min(1, "required: say why").max(500, "expected at most 500 characters") });

export interface ApprovalOutcome {
  approval: ApprovalView;
  /** approve: the version published (a publish, or a rollout's last step), else null. */
  version: number | null;
  /** approve: the rollout started or moved, else null. */
  rollout: string | null;
}

export async function listApprovals(deps: Pick<PublishDeps, "db">, options: { state?: ApprovalRecord["state"] } = {}): Promise<ApprovalView[]> {
  return (await listApprovalRecords(deps.db, options)).map(describeApproval);
}

async function pendingRequest(tx: Tx, id: string, verb: "approve" | "reject"): Promise<ApprovalRecord> {
  const r = await findApproval(tx, id);
  if (!r) throw new ServiceError("not_found", `no approval request ${JSON.stringify(id)}`, { field: "id" });
  if (r.state !== "pending") throw new ServiceError("conflict", `approval request ${r.id} is already ${r.state}${r.decidedBy ? ` (by ${r.decidedBy})` : ""}: nothing to ${verb}`, { field: "id" });
  return r;
}

async function decide(tx: Tx, r: ApprovalRecord, state: "approved" | "rejected", actor: string, reason: string | null, nowMs: number, outcome: { version: number | null; rollout: string | null } | null) {
  const row = await tx.approvalRequest.update({
    where: { id: r.id },
    data: { state, decidedBy: actor, decidedAt: new Date(nowMs), decisionReason: reason, ...(outcome ? { outcome } : {}) },
  });
  await writeAudit(tx, {
    actor,
    action: state === "approved" ? "approval.approve" : "approval.reject",
    entity: "approval",
    entityId: r.id,
    before: { state: "pending", kind: r.kind, requestedBy: r.requestedBy, liveVersion: r.liveVersion, draftChecksum: r.draftChecksum, diff: r.diff.map((l) => l.text) },
    after: { state, reason, ...(outcome ?? {}) },
  });
  return describeApproval({ ...r, state, decidedBy: row.decidedBy, decidedAt: row.decidedAt, decisionReason: row.decisionReason, outcome: row.outcome });
}

/** Approves request `id` as `actor` and does what it asked for; refused to its requester. */
export async function approveRequest(deps: PublishDeps, id: string, options: { actor: string; reason?: string; nowMs?: number }): Promise<ApprovalOutcome> {
  const nowMs = options.nowMs ?? Date.now();
  const reason = options.reason || null;
  return deps.db.$transaction(
    async (tx) => {
      await lockPolicy(tx);
      const r = await pendingRequest(tx, id, "approve");
      if (r.requestedBy === options.actor) {
        throw new ServiceError("forbidden", `${options.actor} requested ${r.id} and cannot approve it: another user with publish rights must (the author of a change never approves it)`, { field: "id" });
      }
      if (r.kind === "publish") {
        const note = `${r.note ? `${r.note}; ` : ""}approved by ${options.actor} (${r.id})`;
        const published = await publishDraft(tx, deps.redis, { actor: r.requestedBy, note, nowMs }, r);
        const outcome = { version: published.version, rollout: null };
        return { approval: await decide(tx, r, "approved", options.actor, reason, nowMs, outcome), ...outcome };
      }
      if (r.kind === "rollout") {
        const started = await startRolloutLocked(tx, deps.redis, r.spec, { actor: options.actor, nowMs }, r);
        if (started.status !== "started") throw new ServiceError("conflict", `${r.id}: the rollout did not start`, { field: "id" });
        const outcome = { version: null, rollout: started.rollout.id };
        return { approval: await decide(tx, r, "approved", options.actor, reason, nowMs, outcome), ...outcome };
      }
      const active = await findActiveRollout(tx);
      if (!active || active.id !== r.rolloutId) throw new ServiceError("conflict", `${r.id} is about rollout ${r.rolloutId ?? "?"}, which is no longer running: nothing to approve`, { field: "id" });
      if (active.author === options.actor) {
        throw new ServiceError("forbidden", `${options.actor} started rollout ${active.id} and cannot approve its steps: another user with publish rights must`, { field: "id" });
      }
      const last = active.steps.length - 1;
      const target = active.step >= last || (active.step + 1 === last && active.steps[last]!.bakeMs === 0) ? last : active.step + 1;
      if (r.step !== target) {
        throw new ServiceError("conflict", `${r.id} is for step ${(r.step ?? 0) + 1}, but rollout ${active.id} is at step ${active.step + 1}: nothing to approve`, { field: "id" });
      }
      // The approval is recorded first: advance then finds the step approved and enters it.
      const decided = await decide(tx, r, "approved", options.actor, reason, nowMs, null);
      const moved = await advance(tx, deps.redis, active, { actor: options.actor, nowMs, caller: { actor: options.actor, role: null } }, `step ${(r.step ?? 0) + 1} approved by ${options.actor} (${r.id})`);
      const version = moved.rollout.state === "completed" ? r.liveVersion + 1 : null;
      await tx.approvalRequest.update({ where: { id: r.id }, data: { outcome: { version, rollout: active.id } } });
      return { approval: decided, version, rollout: active.id };
    },
    { maxWait: 10_000, timeout: 60_000 },
  );
}

/** Rejects request `id` as `actor` with a reason; nothing is published. The requester may withdraw their own this way. */
export async function rejectRequest(deps: Pick<PublishDeps, "db">, id: string, options: { actor: string; reason: string; nowMs?: number }): Promise<ApprovalOutcome> {
  const nowMs = options.nowMs ?? Date.now();
  const reason = options.reason.trim();
  if (!reason) throw new ServiceError("invalid_request", "reason: required: say why the request is rejected", { field: "reason" });
  return deps.db.$transaction(
    async (tx) => {
      await lockPolicy(tx);
      const r = await pendingRequest(tx, id, "reject");
      return { approval: await decide(tx, r, "rejected", options.actor, reason, nowMs, null), version: null, rollout: null };
    },
    { maxWait: 10_000, timeout: 60_000 },
  );
}
