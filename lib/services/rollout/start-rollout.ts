/**
 * `sluice publish --canary … --steps …` / `--rollout FILE`, `POST /api/v1/policy/rollout` and the
 * Policy page's rollout panel: publish the draft as version N+1 to a cohort first
 * (docs/control-plane.md#guarded-rollout).
 *
 * In one transaction holding the policy lock: refuse while another rollout holds the policy, compile
 * the draft (an invalid draft stops here, naming the path), refuse a draft equal to the live version
 * and canaries the new version does not have, insert the Rollout row and its audit entry, then write
 * Redis (the candidate next to the live version, and the first step's routing) — last, so a Redis
 * failure leaves nothing behind. Single-node mode has no Redis to carry two versions: refused.
 *
 * Under the live version's `approval` rule, a first step beyond the blast radius waits for a second
 * person (lib/services/approval/approval-gate.ts): the rollout's id is chosen first, since it salts
 * the cohort the request measures, and approving the request starts the rollout with that id.
 */
import { z } from "zod";
import type { PrismaClient } from "../../generated/prisma/client";
import { writeAudit } from "../../db/audit";
import { latestPolicyVersion, lockPolicy, newId } from "../../db/policy-repo";
import type { ApprovalRecord } from "../../db/approval-repo";
import type { Tx } from "../../db/client";
import { findActiveRollout, toRolloutRecord } from "../../db/rollout-repo";
import { bodyOf, finalizePolicy, policyChecksum } from "../../policy/compile";
import { parseCompiledPolicy } from "../../policy/compiled-schema";
import type { PolicyIssue } from "../../policy/policy-file";
import { stampChanges } from "../../policy/publish-stamps";
import { cohortMembers, planRollout, rolloutSpecSchema, type RolloutSpecInput } from "../../policy/rollout";
import type { Role } from "../../policy/types";
import type { RedisLike } from "../../redis/policy";
import { writeRolloutRouting } from "../../redis/rollout";
import { ServiceError } from "../errors";
import { writeEveryRegion } from "../policy/region-writes";
import { compileDraft } from "../policy/publish-policy";
import { requireApproval } from "../approval/approval-gate";
import type { ApprovalView } from "../approval/approval-view";
import { describeRollout, type RolloutView } from "./rollout-view";
import { routingOf } from "./transitions";

/** Why single-node mode refuses a rollout (docs/control-plane.md#guarded-rollout). */
export const SINGLE_NODE_REFUSAL =
  "no guarded rollout in single-node mode (SLUICE_MODE=single-node): its one decision server reads one policy version from PostgreSQL and has no Redis to carry a rollout's second version and cohort; publish the draft to everyone instead, or run with Redis";

export interface RolloutDeps {
  db: PrismaClient;
  /** null in single-node mode, which refuses rollouts. */
  redis: RedisLike | null;
}

/** The rollout spec's issues as a ServiceError naming the first field (`steps[1]`), every issue listed. */
export function invalidRollout(issues: z.core.$ZodIssue[], prefix = ""): ServiceError {
  const list: PolicyIssue[] = issues.map((i) => ({ path: prefix + pathOf(i.path), message: i.message }));
  const first = list[0]!;
  return new ServiceError("invalid_request", `${first.path || "rollout"}: ${first.message}`, { field: first.path || null, issues: list });
}

function pathOf(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : `${i > 0 ? "." : ""}${String(p)}`)).join("");
}

/** Parses a rollout spec (file, request body, CLI flags) or throws invalid_request naming the field. */
export function parseRolloutSpec(input: unknown) {
  const parsed = rolloutSpecSchema.safeParse(input);
  if (!parsed.success) throw invalidRollout(parsed.error.issues);
  return parsed.data;
}

/** A rollout started, or (under an approval rule) waiting for a second person with nothing published. */
export type StartRolloutResult = { status: "started"; rollout: RolloutView } | { status: "approval_pending"; approval: ApprovalView };

export interface StartRolloutOptions {
  actor: string;
  /** The caller's role (null: unknown, never an admin's bypass). */
  role?: Role | null;
  nowMs?: number;
}

export async function startRollout(deps: RolloutDeps, input: RolloutSpecInput | unknown, options: StartRolloutOptions): Promise<StartRolloutResult> {
  const nowMs = options.nowMs ?? Date.now();
  return deps.db.$transaction(
    async (tx) => {
      await lockPolicy(tx);
      return startRolloutLocked(tx, deps.redis, input, { ...options, nowMs }, null);
    },
    { maxWait: 10_000, timeout: 60_000 },
  );
}

/**
 * Starts a rollout in the caller's transaction holding the policy lock. `approved`: the `rollout`
 * request a second person approved; it starts with that request's id and for its draft only.
 */
export async function startRolloutLocked(tx: Tx, redisOrNull: RolloutDeps["redis"], input: unknown, options: StartRolloutOptions & { nowMs: number }, approved: ApprovalRecord | null): Promise<StartRolloutResult> {
  if (!redisOrNull) throw new ServiceError("conflict", SINGLE_NODE_REFUSAL, { field: null });
  const redis = redisOrNull;
  const spec = parseRolloutSpec(input);
  const plan = planRollout(spec);
  const { nowMs } = options;
  const active = await findActiveRollout(tx);
  if (active) throw new ServiceError("conflict", `rollout ${active.id} is ${active.state} (${describeRollout(active).stepLabel}): promote, pause or abort it before starting another`, { field: "rollout" });
  const latest = await latestPolicyVersion(tx);
  const live = latest ? parseCompiledPolicy(latest.document) : null;
  if (!latest || !live?.ok) throw new ServiceError("conflict", "nothing valid is published yet: publish a first version, then roll out changes to it", { field: null });
  const body = await compileDraft(tx);
  const draftChecksum = policyChecksum(body);
  const candidateVersion = latest.version + 1;
  const candidate = finalizePolicy(stampChanges(body, bodyOf(live.value), nowMs), candidateVersion, new Date(nowMs));
  if (candidate.checksum === latest.checksum) throw new ServiceError("conflict", `the draft equals the live version v${latest.version}: nothing to roll out`, { field: null });
  plan.canaries.forEach((slug, i) => {
    if (!(slug in candidate.tenants)) throw new ServiceError("invalid_request", `canaries[${i}]: no tenant ${JSON.stringify(slug)} in the draft`, { field: `canaries[${i}]` });
  });
  const id = approved?.rolloutId ?? newId("rollout");
  if (approved) {
    if (approved.liveVersion !== latest.version || approved.draftChecksum !== draftChecksum) {
      throw new ServiceError("conflict", `${approved.id} approved a different draft (v${approved.liveVersion} was live when it was requested; the draft or the live version changed since): nothing rolled out; start the rollout again to request a new approval`, { field: "approval" });
    }
  } else {
    const cohort = cohortMembers({ salt: id, canaries: plan.canaries, percent: plan.steps[0]!.percent }, Object.keys(candidate.tenants));
    const caller = { actor: options.actor, role: options.role ?? null };
    const pending = await requireApproval(tx, { kind: "rollout", live: live.value, candidate, draftChecksum, cohort, caller, note: plan.note, rolloutId: id, spec, nowMs });
    if (pending) return { status: "approval_pending", approval: pending };
  }
  const row = await tx.rollout.create({
    data: {
      id,
      state: "running",
      liveVersion: latest.version,
      candidateVersion,
      candidateChecksum: candidate.checksum,
      candidate: JSON.parse(JSON.stringify(candidate)),
      body: JSON.parse(JSON.stringify(body)),
      canaries: plan.canaries,
      steps: plan.steps.map((s) => ({ ...s })),
      guardrails: { ...plan.guardrails },
      step: 0,
      stepStartedAt: new Date(nowMs),
      stepStarts: [new Date(nowMs)],
      note: plan.note,
      author: approved?.requestedBy ?? options.actor,
      createdAt: new Date(nowMs),
      updatedAt: new Date(nowMs),
    },
  });
  const r = toRolloutRecord(row);
  await writeAudit(tx, {
    actor: options.actor,
    action: "rollout.start",
    entity: "rollout",
    entityId: id,
    before: { version: latest.version, checksum: latest.checksum },
    after: { candidateVersion, checksum: candidate.checksum, canaries: plan.canaries, steps: plan.steps.map((s) => ({ ...s })), guardrails: { ...plan.guardrails }, approval: approved?.id ?? null },
  });
  // An alert a guardrail raised about an earlier rollout is over once the next one starts.
  await tx.alertEvent.updateMany({ where: { kind: "rollout_guardrail", resolvedAt: null }, data: { resolvedAt: new Date(nowMs) } });
  // Every region's Redis (SLUICE_REGIONS); one that missed it gets it from the worker's guard.
  await writeEveryRegion(tx, redis, `writing rollout ${id}`, (region) => writeRolloutRouting(region, candidate, routingOf(r)), nowMs);
  return { status: "started", rollout: describeRollout(r, nowMs) };
}
