/**
 * A rollout's moves, shared by the people who drive it (`sluice rollout promote|pause|abort`, the
 * admin API, the Policy page) and by the guardrail job (lib/jobs/rollout-guard.ts): each runs in
 * the caller's transaction holding the policy lock, updates the row, writes its audit entry and
 * tells Redis (the routing of the new step, or everyone back to the live version) — every region's
 * Redis with SLUICE_REGIONS (lib/services/policy/region-writes.ts). Redis is written last, so when no
 * region took it the transaction rolls back and nothing changed anywhere; a region that missed it
 * is recorded as behind and the worker's guard writes it there (lib/jobs/rollout-guard.ts).
 *
 * The last step completes the rollout: the candidate's draft body is published as a normal version
 * (publishBody; the version number the candidate carried, since nothing else can publish meanwhile).
 *
 * Under the live version's `approval` rule, a step beyond the blast radius is entered only once a
 * second person approved it: `advance` records the request (lib/services/approval/approval-gate.ts)
 * and leaves the rollout where it is, still baking under its guardrails, until then.
 */
import type { Tx } from "../../db/client";
import { writeAudit, type AuditJson } from "../../db/audit";
import { findApprovedStep, findPendingApproval } from "../../db/approval-repo";
import { latestPolicyVersion } from "../../db/policy-repo";
import type { RolloutRecord } from "../../db/rollout-repo";
import type { CompiledPolicy, CompiledPolicyBody } from "../../policy/compiled";
import { parseCompiledPolicy } from "../../policy/compiled-schema";
import { cohortMembers, type RolloutRouting, type RolloutStateName } from "../../policy/rollout";
import type { RedisLike } from "../../redis/policy";
import { clearRolloutRouting, writeRolloutRouting } from "../../redis/rollout";
import { ServiceError } from "../errors";
import { writeEveryRegion } from "../policy/region-writes";
import { publishBody } from "../policy/publish-policy";
import { requireApproval, type Caller } from "../approval/approval-gate";
import { describeApproval, type ApprovalView } from "../approval/approval-view";
import { candidateTenants } from "./rollout-view";

/** What Redis is told for a rollout at its current step. */
export function routingOf(r: Pick<RolloutRecord, "id" | "liveVersion" | "candidateVersion" | "candidateChecksum" | "canaries" | "steps" | "step">): RolloutRouting {
  return {
    id: r.id,
    liveVersion: r.liveVersion,
    candidateVersion: r.candidateVersion,
    candidateChecksum: r.candidateChecksum,
    canaries: [...r.canaries],
    percent: r.steps[r.step]!.percent,
    step: r.step,
  };
}

/** The candidate document stored with the rollout (validated as every reader validates it). */
export function candidateOf(r: RolloutRecord): CompiledPolicy {
  const parsed = parseCompiledPolicy(r.candidate);
  if (!parsed.ok) throw new ServiceError("conflict", `rollout ${r.id}: its stored candidate v${r.candidateVersion} no longer validates`, { field: "rollout" });
  return parsed.value;
}

export interface MoveMeta {
  actor: string;
  nowMs: number;
}

/** Who asks for the next step: a person (`rollout promote`), or the guard on the rollout author's behalf. */
export interface AdvanceMeta extends MoveMeta {
  caller: Caller;
}

/**
 * The pending approval that step `next` waits for, or null when it may be entered: no rule, within
 * the blast radius, or approved. The last step's cohort is everyone.
 */
async function stepApproval(tx: Tx, r: RolloutRecord, next: number, meta: AdvanceMeta): Promise<ApprovalView | null> {
  if (await findApprovedStep(tx, r.id, next)) return null;
  // Already asked for (by a person's promote or by the guard): the same request, whoever asked.
  const pending = await findPendingApproval(tx);
  if (pending?.kind === "rollout-step" && pending.rolloutId === r.id && pending.step === next) return describeApproval(pending);
  const latest = await latestPolicyVersion(tx);
  const live = latest ? parseCompiledPolicy(latest.document) : null;
  if (!live?.ok) return null;
  const last = next >= r.steps.length - 1;
  const cohort = last ? null : cohortMembers({ salt: r.id, canaries: r.canaries, percent: r.steps[next]!.percent }, candidateTenants(r));
  return requireApproval(tx, {
    kind: "rollout-step",
    live: live.value,
    candidate: candidateOf(r),
    draftChecksum: r.candidateChecksum,
    cohort,
    caller: meta.caller,
    note: r.note,
    rolloutId: r.id,
    step: next,
    nowMs: meta.nowMs,
  });
}

async function record(tx: Tx, r: RolloutRecord, action: string, data: { state: RolloutStateName; step?: number; reason?: string | null; ended?: boolean }, meta: MoveMeta, extra: Record<string, AuditJson> = {}): Promise<RolloutRecord> {
  const stepChanged = data.step !== undefined && data.step !== r.step;
  const row = await tx.rollout.update({
    where: { id: r.id },
    data: {
      state: data.state,
      ...(data.step !== undefined ? { step: data.step } : {}),
      ...(stepChanged ? { stepStartedAt: new Date(meta.nowMs), stepStarts: { push: new Date(meta.nowMs) } } : {}),
      ...(data.reason !== undefined ? { reason: data.reason } : {}),
      ...(data.ended ? { endedAt: new Date(meta.nowMs) } : {}),
      updatedAt: new Date(meta.nowMs),
    },
  });
  await writeAudit(tx, {
    actor: meta.actor,
    action,
    entity: "rollout",
    entityId: r.id,
    before: { state: r.state, step: r.step },
    after: { state: data.state, step: data.step ?? r.step, reason: data.reason ?? null, ...extra },
  });
  // A step the rollout was waiting to enter is moot once it ended.
  if (data.ended) {
    await tx.approvalRequest.updateMany({ where: { rolloutId: r.id, state: "pending" }, data: { state: "superseded", decidedAt: new Date(meta.nowMs), decisionReason: `rollout ${r.id} ${data.state}` } });
  }
  return { ...r, state: data.state, step: row.step, stepStartedAt: row.stepStartedAt, stepStarts: row.stepStarts, reason: row.reason, endedAt: row.endedAt, updatedAt: row.updatedAt };
}

/**
 * Moves to the next step (or completes on the last), running again if it was paused; or, when that
 * step needs a second person's approval, records the request and moves nothing (`approval`).
 */
export async function advance(tx: Tx, redis: RedisLike | null, r: RolloutRecord, meta: AdvanceMeta, why: string): Promise<{ rollout: RolloutRecord; approval: ApprovalView | null }> {
  const next = r.step + 1;
  const last = r.steps.length - 1;
  const completes = r.step >= last || (next === last && r.steps[last]!.bakeMs === 0);
  const approval = await stepApproval(tx, r, completes ? last : next, meta);
  if (approval) return { rollout: r, approval };
  if (completes) return { rollout: await complete(tx, redis, r, meta, why), approval: null };
  const moved = await record(tx, r, "rollout.promote", { state: "running", step: next }, meta, { why, percent: r.steps[next]!.percent });
  if (redis) await writeEveryRegion(tx, redis, `routing rollout ${r.id} to step ${next + 1}`, (region) => writeRolloutRouting(region, candidateOf(r), routingOf(moved)), meta.nowMs);
  return { rollout: moved, approval: null };
}

/** The new version becomes live for everyone: a normal publish of the candidate's body. */
export async function complete(tx: Tx, redis: RedisLike | null, r: RolloutRecord, meta: MoveMeta, why: string): Promise<RolloutRecord> {
  const body = r.body as unknown as CompiledPolicyBody;
  const { doc } = await publishBody(tx, redis, body, { actor: meta.actor, note: r.note ?? `rollout ${r.id}`, nowMs: meta.nowMs });
  const done = await record(tx, r, "rollout.complete", { state: "completed", step: r.steps.length - 1, reason: why, ended: true }, meta, { version: doc.version });
  if (redis) await writeEveryRegion(tx, redis, `ending rollout ${r.id}`, (region) => clearRolloutRouting(region, doc.version), meta.nowMs);
  return done;
}

/** Stops advancing; the cohort keeps the new version (a person's pause, or a pause-only guardrail). */
export async function pause(tx: Tx, r: RolloutRecord, meta: MoveMeta, reason: string | null): Promise<RolloutRecord> {
  return record(tx, r, "rollout.pause", { state: "paused", reason }, meta);
}

/** Ends the rollout with everyone on the live version: `aborted` by a person, `rolled-back` by a guardrail. The draft stays as it is. */
export async function stop(tx: Tx, redis: RedisLike | null, r: RolloutRecord, meta: MoveMeta, state: "aborted" | "rolled-back", reason: string): Promise<RolloutRecord> {
  const ended = await record(tx, r, state === "aborted" ? "rollout.abort" : "rollout.rollback", { state, reason, ended: true }, meta);
  if (redis) await writeEveryRegion(tx, redis, `rolling rollout ${r.id} back`, (region) => clearRolloutRouting(region, r.liveVersion), meta.nowMs);
  return ended;
}
