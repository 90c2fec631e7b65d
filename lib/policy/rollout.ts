/**
 * Guarded rollout, the pure part (docs/control-plane.md#guarded-rollout): the rollout file's
 * schema, the step list's parser (`10%:1h,100%`), and the one function that puts a tenant in or out
 * of a rollout's cohort. The control plane (who is in the cohort, the guardrails' comparison), the
 * decision servers (which version answers a tenant) and the UI all call `cohortBucket`, so they
 * can never disagree about a tenant.
 */
import { z } from "zod";
import { formatDurationMs, parseDurationMs } from "./duration";
import { hash32 } from "./hash32";

/**
 * The tenant's place in one rollout's order (`salt`: the rollout's id), a 32-bit unsigned integer.
 * Stable: it depends only on the two strings, so every process and every step computes the same
 * one. FNV-1a over the UTF-16 code units, then murmur3's finalizer, so that slugs that differ in
 * one character (`tenant-0041`, `tenant-0042`) land far apart; salted, so that each rollout picks
 * its own cohort rather than always the same tenants.
 */
export function cohortHash(salt: string, tenant: string): number {
  return hash32(`${salt}\u0000${tenant}`);
}

/** What decides a tenant's version during a rollout: named tenants, then a share of all tenants. */
export interface Cohort {
  /** The rollout's id: salts the hash. */
  salt: string;
  canaries: readonly string[];
  /** 0–100; 0 is the canaries alone. */
  percent: number;
}

/**
 * The tenants that get the rollout's new version: every canary, and the `percent` % of `tenants`
 * (the new version's tenants, the same list on every process) that come first in the rollout's
 * hash order — exactly round(percent × n / 100) of them, not a random draw around it. A higher
 * percentage takes a longer prefix of the same order, so a tenant in the cohort stays in it at
 * every later step. Computed once per document and step (O(n log n)); a decision then asks a Set.
 */
export function cohortMembers(cohort: Cohort, tenants: readonly string[]): Set<string> {
  const members = new Set(cohort.canaries);
  const take = Math.round((cohort.percent * tenants.length) / 100);
  if (take <= 0) return members;
  const order = [...new Set(tenants)]
    .map((tenant) => ({ tenant, hash: cohortHash(cohort.salt, tenant) }))
    .sort((a, b) => a.hash - b.hash || (a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : 0));
  for (let i = 0; i < take && i < order.length; i++) members.add(order[i]!.tenant);
  return members;
}

/** One step of a rollout: the cohort holds `percent` % of the tenants (and every canary) for `bakeMs`. */
export interface RolloutStep {
  /** 0 (the canaries alone) to 100. */
  percent: number;
  /** How long the step runs with the guardrails holding before the next one; 0 on the last step: complete at once. */
  bakeMs: number;
}

export interface RolloutGuardrails {
  /** The cohort's denied share may exceed the control's by at most this many percentage points over a minute. */
  maxDenyShareIncrease: number;
  /**
   * No single cohort tenant's denied share may rise more than this many percentage points over a
   * minute above its own share in the 30 minutes before the rollout (the control's share when it
   * had no traffic then); only tenants with at least `minDecisions` decisions in the minute count.
   */
  maxTenantDenyShareIncrease: number;
  /** Store errors as the `redis_errors` alert defines them (≥ 1% of the minute's decisions, or a breaker opening) breach. */
  storeErrors: boolean;
  /** The reject path's p95 latency over the minute may not exceed this (null: the policy's requirements.rejectP95, default 50 ms). */
  maxRejectP95Ms: number | null;
  /** On a breach only pause; the cohort keeps the new version. */
  pauseOnly: boolean;
  /** Decisions the cohort (and each tenant, and the reject path) must have made in the minute for a comparison to count. */
  minDecisions: number;
}

export const DEFAULT_GUARDRAILS: RolloutGuardrails = { maxDenyShareIncrease: 5, maxTenantDenyShareIncrease: 20, storeErrors: true, maxRejectP95Ms: null, pauseOnly: false, minDecisions: 10 };
/** The canaries' bake time when the rollout does not name one. */
export const DEFAULT_CANARY_BAKE_MS = 15 * 60_000;

const STEP_PATTERN = /^(\d{1,3}(?:\.\d{1,2})?)%(?::(.+))?$/;

const bake = z.string().superRefine((value, ctx) => {
  if (parseDurationMs(value) === null) ctx.addIssue({ code: "custom", message: `expected a duration like 30s, 15m, 1h or 2d, got ${JSON.stringify(value)}` });
});

const stepSchema = z.union([
  z.string().superRefine((value, ctx) => {
    const m = STEP_PATTERN.exec(value);
    if (!m) ctx.addIssue({ code: "custom", message: `expected <percent>%[:<bake time>] like 10%:1h or 100%, got ${JSON.stringify(value)}` });
    else if (m[2] !== undefined && parseDurationMs(m[2]) === null) ctx.addIssue({ code: "custom", message: `bake time: expected a duration like 30s, 15m, 1h or 2d, got ${JSON.stringify(m[2])}` });
  }),
  z.strictObject({ percent: z.number().min(0, "expected 0–100").max(100, "expected 0–100"), bake: bake.optional() }),
]);

/** The rollout file (`sluice publish --rollout FILE`, `POST /api/v1/policy/rollout`): YAML or JSON. */
export const rolloutSpecSchema = z
  .strictObject({
    canaries: z.array(z.string().min(1, "expected a tenant slug")).max(1_000).default([]),
    canaryBake: bake.optional(),
    steps: z.array(stepSchema).min(1, "expected at least one step, ending at 100%").max(20),
    guardrails: z
      .strictObject({
        maxDenyShareIncrease: z.number().gt(0, "expected percentage points > 0").max(100, "expected percentage points ≤ 100").optional(),
        maxTenantDenyShareIncrease: z.number().gt(0, "expected percentage points > 0").max(100, "expected percentage points ≤ 100").optional(),
        storeErrors: z.boolean().optional(),
        maxRejectP95: z
          .string()
          .superRefine((value, ctx) => {
            if (parseDurationMs(value) === null) ctx.addIssue({ code: "custom", message: `expected a duration like 50ms or 1s, got ${JSON.stringify(value)}` });
          })
          .optional(),
        pauseOnly: z.boolean().optional(),
        minDecisions: z.number().int().min(1).max(1_000_000).optional(),
      })
      .optional(),
    note: z.string().max(500).optional(),
  })
  .superRefine((spec, ctx) => {
    const steps = spec.steps.map(toStep);
    const seen = new Set<string>();
    spec.canaries.forEach((slug, i) => {
      if (seen.has(slug)) ctx.addIssue({ code: "custom", path: ["canaries", i], message: `duplicate tenant ${JSON.stringify(slug)}` });
      seen.add(slug);
    });
    steps.forEach((step, i) => {
      if (step === null) return;
      if (step.percent <= 0 || step.percent > 100) ctx.addIssue({ code: "custom", path: ["steps", i], message: `percentage must be above 0 and at most 100, got ${step.percent}%` });
      const prev = steps[i - 1];
      if (i > 0 && prev && step.percent <= prev.percent) ctx.addIssue({ code: "custom", path: ["steps", i], message: `percentages must increase: ${step.percent}% after ${prev.percent}%` });
    });
    const last = steps[steps.length - 1];
    if (last && last.percent !== 100) ctx.addIssue({ code: "custom", path: ["steps", steps.length - 1], message: `the last step must be 100%, got ${last.percent}%` });
    steps.slice(0, -1).forEach((step, i) => {
      if (step && step.bakeMs === 0) ctx.addIssue({ code: "custom", path: ["steps", i], message: "a step before the last needs a bake time, like 10%:1h" });
    });
  });

export type RolloutSpecInput = z.input<typeof rolloutSpecSchema>;
export type RolloutSpec = z.output<typeof rolloutSpecSchema>;

function toStep(step: RolloutSpec["steps"][number]): RolloutStep | null {
  if (typeof step === "string") {
    const m = STEP_PATTERN.exec(step);
    if (!m) return null;
    const bakeMs = m[2] === undefined ? 0 : parseDurationMs(m[2]);
    return bakeMs === null ? null : { percent: Number(m[1]), bakeMs };
  }
  const bakeMs = step.bake === undefined ? 0 : parseDurationMs(step.bake);
  return bakeMs === null ? null : { percent: step.percent, bakeMs };
}

/** A rollout as it runs: every step, the canaries' own first (percent 0) when there are canaries. */
export interface RolloutPlan {
  canaries: string[];
  steps: RolloutStep[];
  guardrails: RolloutGuardrails;
  note: string | null;
}

/** The plan of a spec that passed rolloutSpecSchema. */
export function planRollout(spec: RolloutSpec): RolloutPlan {
  const steps = spec.steps.map((s) => toStep(s)!);
  if (spec.canaries.length > 0) steps.unshift({ percent: 0, bakeMs: spec.canaryBake ? parseDurationMs(spec.canaryBake)! : DEFAULT_CANARY_BAKE_MS });
  return {
    canaries: spec.canaries,
    steps,
    guardrails: guardrailsOf(spec.guardrails),
    note: spec.note ?? null,
  };
}

function guardrailsOf(g: RolloutSpec["guardrails"]): RolloutGuardrails {
  const { maxRejectP95, ...rest }: NonNullable<RolloutSpec["guardrails"]> = g ?? {};
  return { ...DEFAULT_GUARDRAILS, ...stripUndefined(rest), ...(maxRejectP95 !== undefined ? { maxRejectP95Ms: parseDurationMs(maxRejectP95) } : {}) };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** `--steps 10%:1h,100%` as the spec's step list (validated by rolloutSpecSchema, which names the step). */
export function splitSteps(text: string): string[] {
  return text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/** A step as people read it: `canaries for 15m`, `10% for 1h`, `100%`. */
export function describeStep(step: RolloutStep, canaries: number): string {
  const who = step.percent === 0 ? `${canaries} canar${canaries === 1 ? "y" : "ies"}` : `${step.percent}%${canaries > 0 ? ` + ${canaries} canar${canaries === 1 ? "y" : "ies"}` : ""}`;
  return step.bakeMs > 0 ? `${who} for ${formatDurationMs(step.bakeMs)}` : who;
}

export const ROLLOUT_STATES = ["running", "paused", "aborted", "rolled-back", "completed"] as const;
export type RolloutStateName = (typeof ROLLOUT_STATES)[number];
/** A rollout in one of these holds the policy: no publish, rollback or second rollout meanwhile. */
export const ACTIVE_ROLLOUT_STATES: readonly RolloutStateName[] = ["running", "paused"];

/**
 * What the decision servers read from Redis (`{policy}:rollout`): which version the cohort gets
 * and who is in it. Absent, or `percent` 0 with no canaries: everyone gets the live version.
 */
export const rolloutRoutingSchema = z.strictObject({
  id: z.string().min(1),
  liveVersion: z.number().int().min(1),
  candidateVersion: z.number().int().min(2),
  candidateChecksum: z.string().min(1),
  canaries: z.array(z.string()),
  percent: z.number().min(0).max(100),
  step: z.number().int().min(0),
});
export type RolloutRouting = z.output<typeof rolloutRoutingSchema>;
