/**
 * `sluice rollout status|promote|pause|abort`, `GET /api/v1/policy/rollout` and
 * `POST /api/v1/policy/rollout/{promote,pause,abort}`, and the Policy page's buttons: one function
 * each, over the moves of ./transitions.ts, under the policy lock.
 */
import { z } from "zod";
import { lockPolicy } from "../../db/policy-repo";
import { findActiveRollout, findLatestRollout, type RolloutRecord } from "../../db/rollout-repo";
import { findPendingApproval } from "../../db/approval-repo";
import type { Role } from "../../policy/types";
import { describeApproval, type ApprovalView } from "../approval/approval-view";
import type { Db, Tx } from "../../db/client";
import { ServiceError } from "../errors";
import { describeRollout, type RolloutView } from "./rollout-view";
import type { RolloutDeps } from "./start-rollout";
import { advance, pause, stop } from "./transitions";

export const ROLLOUT_ACTIONS = ["promote", "pause", "abort"] as const;
export type RolloutAction = (typeof ROLLOUT_ACTIONS)[number];

/** The body of POST /api/v1/policy/rollout/{action}. */
export const rolloutActionSchema = z.strictObject({ reason: z.string().max(500).optional() });

/** The request waiting for a second person about this rollout (its next step), or null. */
export async function rolloutApproval(db: Db | Tx, r: RolloutRecord): Promise<ApprovalView | null> {
  const pending = await findPendingApproval(db);
  return pending && pending.rolloutId === r.id && pending.kind === "rollout-step" ? describeApproval(pending) : null;
}

/** The running or paused rollout, else the latest one (null: there never was one). */
export async function rolloutStatus(deps: Pick<RolloutDeps, "db">): Promise<RolloutView | null> {
  const r = (await findActiveRollout(deps.db)) ?? (await findLatestRollout(deps.db));
  return r ? describeRollout(r, undefined, await rolloutApproval(deps.db, r)) : null;
}

async function withActive<T>(deps: RolloutDeps, action: RolloutAction, fn: (tx: Tx, r: RolloutRecord) => Promise<T>): Promise<T> {
  return deps.db.$transaction(
    async (tx) => {
      await lockPolicy(tx);
      const r = await findActiveRollout(tx);
      if (!r) {
        const last = await findLatestRollout(tx);
        throw new ServiceError("conflict", `no rollout is running to ${action}${last ? ` (the last one, ${last.id}, is ${last.state})` : ""}`, { field: "rollout" });
      }
      return fn(tx, r);
    },
    { maxWait: 10_000, timeout: 60_000 },
  );
}

/**
 * Promote, pause or abort. A promote into a step beyond the approval rule's blast radius moves
 * nothing: it records a request for a second person, which the answer's `approval` names.
 */
export async function changeRollout(deps: RolloutDeps, action: RolloutAction, options: { actor: string; role?: Role | null; reason?: string; nowMs?: number }): Promise<RolloutView> {
  const meta = { actor: options.actor, nowMs: options.nowMs ?? Date.now() };
  let approval: ApprovalView | null = null;
  const r = await withActive(deps, action, async (tx, active) => {
    if (action === "promote") {
      const moved = await advance(tx, deps.redis, active, { ...meta, caller: { actor: options.actor, role: options.role ?? null } }, options.reason ?? `promoted by ${options.actor}`);
      approval = moved.approval;
      return moved.rollout;
    }
    if (action === "pause") {
      if (active.state === "paused") throw new ServiceError("conflict", `rollout ${active.id} is already paused: promote or abort it`, { field: "rollout" });
      return pause(tx, active, meta, options.reason ?? `paused by ${options.actor}`);
    }
    return stop(tx, deps.redis, active, meta, "aborted", options.reason ?? `aborted by ${options.actor}`);
  });
  return describeRollout(r, undefined, approval);
}
