/**
 * Rollout rows (prisma Rollout; docs/control-plane.md#guarded-rollout), read back into the pure
 * core's types: a row's JSON columns are parsed with zod, so a row that does not parse is an error
 * naming the column, never a rollout with made-up steps.
 */
import { z } from "zod";
import type { Rollout } from "../generated/prisma/client";
import { ACTIVE_ROLLOUT_STATES, DEFAULT_GUARDRAILS, ROLLOUT_STATES, type RolloutGuardrails, type RolloutStateName, type RolloutStep } from "../policy/rollout";
import type { Db, Tx } from "./client";

const stepsColumn = z.array(z.strictObject({ percent: z.number().min(0).max(100), bakeMs: z.number().int().min(0) })).min(1);
// Rows from before the per-tenant, store-error and latency guardrails get their defaults.
const guardrailsColumn = z.strictObject({
  maxDenyShareIncrease: z.number().positive(),
  maxTenantDenyShareIncrease: z.number().positive().default(DEFAULT_GUARDRAILS.maxTenantDenyShareIncrease),
  storeErrors: z.boolean().default(DEFAULT_GUARDRAILS.storeErrors),
  maxRejectP95Ms: z.number().positive().nullable().default(DEFAULT_GUARDRAILS.maxRejectP95Ms),
  pauseOnly: z.boolean(),
  minDecisions: z.number().int().min(1),
});

/** A rollout row with its JSON columns typed. */
export interface RolloutRecord extends Omit<Rollout, "steps" | "guardrails" | "state"> {
  state: RolloutStateName;
  steps: RolloutStep[];
  guardrails: RolloutGuardrails;
}

export function toRolloutRecord(row: Rollout): RolloutRecord {
  const steps = stepsColumn.safeParse(row.steps);
  const guardrails = guardrailsColumn.safeParse(row.guardrails);
  const state = z.enum(ROLLOUT_STATES).safeParse(row.state);
  if (!steps.success || !guardrails.success || !state.success) {
    const column = !steps.success ? "steps" : !guardrails.success ? "guardrails" : "state";
    throw new Error(`rollout ${row.id}: column ${column} does not parse`);
  }
  return { ...row, state: state.data, steps: steps.data, guardrails: guardrails.data };
}

/** The rollout that holds the policy now (running or paused), or null. */
export async function findActiveRollout(db: Db | Tx): Promise<RolloutRecord | null> {
  const row = await db.rollout.findFirst({ where: { state: { in: [...ACTIVE_ROLLOUT_STATES] } }, orderBy: { createdAt: "desc" } });
  return row ? toRolloutRecord(row) : null;
}

/** The newest rollout whatever its state (status after it ended says how), or null. */
export async function findLatestRollout(db: Db | Tx): Promise<RolloutRecord | null> {
  const row = await db.rollout.findFirst({ orderBy: [{ createdAt: "desc" }, { id: "desc" }] });
  return row ? toRolloutRecord(row) : null;
}
