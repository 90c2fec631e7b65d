/**
 * A rollout as the CLI, the admin API and the Policy page show it: the step, the cohort (canaries,
 * share, and who is in it), the guardrails, the last check and, after it stopped, why.
 */
import type { RolloutRecord } from "../../db/rollout-repo";
import type { ApprovalView } from "../approval/approval-view";
import { cohortMembers, describeStep, type RolloutGuardrails, type RolloutStateName } from "../../policy/rollout";

/** The tenants of a rollout's candidate document, the universe its percentages are shares of. */
export function candidateTenants(r: Pick<RolloutRecord, "candidate">): string[] {
  const doc = r.candidate as { tenants?: Record<string, unknown> } | null;
  return Object.keys(doc?.tenants ?? {}).sort();
}

/** The tenants in the rollout's cohort at its current step (empty once it stopped). */
export function cohortOf(r: RolloutRecord): Set<string> {
  if (r.state !== "running" && r.state !== "paused") return new Set();
  return cohortMembers({ salt: r.id, canaries: r.canaries, percent: r.steps[r.step]!.percent }, candidateTenants(r));
}

/**
 * One side's figures in a check: decisions, every denial, the 429s among them and the 429 share
 * (429s / decisions, as the dashboards count it). `denied429` is absent on checks recorded before
 * the guard told 429s apart (their `share` counted every denial).
 */
export interface GuardFigures {
  decisions: number;
  denied: number;
  denied429?: number;
  share: number;
}

/** Figures of one guardrail check (RolloutRecord.lastCheck). */
export interface GuardCheck {
  at: string;
  minute: string;
  cohort: GuardFigures;
  control: GuardFigures;
  /** cohort share − control share, in percentage points. */
  marginPoints: number;
  verdict: "holds" | "breached" | "too_few_decisions" | "no_control";
  /** Each guardrail the minute broke, with its figures and the tenants that tripped it (absent on checks from before it existed). */
  breaches?: { guardrail: "cohort_429_share" | "tenant_429_share" | "store_errors" | "reject_latency"; message: string; tenants: string[] }[];
}

export interface RolloutView {
  id: string;
  state: RolloutStateName;
  liveVersion: number;
  candidateVersion: number;
  author: string;
  note: string | null;
  createdAt: string;
  endedAt: string | null;
  /** 0-based index into `steps`. */
  step: number;
  stepLabel: string;
  steps: { percent: number; bakeMs: number; label: string }[];
  stepStartedAt: string;
  /** When the step's bake time ends (null: the last step, or stopped). */
  bakeEndsAt: string | null;
  cohort: { canaries: string[]; percent: number; tenants: number; of: number; members: string[] };
  guardrails: RolloutGuardrails;
  lastCheck: GuardCheck | null;
  reason: string | null;
  /** The request for a second person the next step waits for (docs/control-plane.md#approval), or null. */
  approval: ApprovalView | null;
}

const MEMBERS_SHOWN = 50;

export function describeRollout(r: RolloutRecord, _nowMs?: number, approval: ApprovalView | null = null): RolloutView {
  const universe = candidateTenants(r);
  const members = [...cohortOf(r)].sort();
  const current = r.steps[r.step]!;
  const running = r.state === "running" || r.state === "paused";
  return {
    id: r.id,
    state: r.state,
    liveVersion: r.liveVersion,
    candidateVersion: r.candidateVersion,
    author: r.author,
    note: r.note,
    createdAt: r.createdAt.toISOString(),
    endedAt: r.endedAt?.toISOString() ?? null,
    step: r.step,
    stepLabel: `step ${r.step + 1} of ${r.steps.length}: ${describeStep(current, r.canaries.length)}`,
    steps: r.steps.map((s) => ({ ...s, label: describeStep(s, r.canaries.length) })),
    stepStartedAt: r.stepStartedAt.toISOString(),
    bakeEndsAt: running && current.bakeMs > 0 ? new Date(r.stepStartedAt.getTime() + current.bakeMs).toISOString() : null,
    cohort: { canaries: [...r.canaries], percent: current.percent, tenants: members.length, of: universe.length, members: members.slice(0, MEMBERS_SHOWN) },
    guardrails: r.guardrails,
    lastCheck: (r.lastCheck as GuardCheck | null) ?? null,
    reason: r.reason,
    approval,
  };
}

const pct = (share: number) => `${(share * 100).toFixed(1)}%`;

/** `sluice rollout status`, as lines. */
export function formatRolloutStatus(v: RolloutView): string {
  const lines = [
    `Rollout ${v.id}: ${v.state} — v${v.candidateVersion} to a cohort, v${v.liveVersion} for everyone else (by ${v.author}${v.note ? `, "${v.note}"` : ""})`,
    `  ${v.stepLabel}${v.bakeEndsAt ? `, baking until ${v.bakeEndsAt}` : ""}`,
    `  steps: ${v.steps.map((s, i) => (i === v.step ? `[${s.label}]` : s.label)).join(" → ")}`,
    `  cohort: ${v.cohort.tenants} of ${v.cohort.of} tenants${v.cohort.canaries.length ? `; canaries ${v.cohort.canaries.join(", ")}` : ""}${v.cohort.members.length ? `; ${v.cohort.members.join(", ")}${v.cohort.tenants > v.cohort.members.length ? ", …" : ""}` : ""}`,
    `  guardrails: cohort 429 share at most ${v.guardrails.maxDenyShareIncrease} points above the control's per minute (at least ${v.guardrails.minDecisions} cohort decisions); any one tenant's at most ${v.guardrails.maxTenantDenyShareIncrease} points above its own before the rollout${v.guardrails.storeErrors ? "; store errors under 1% of decisions, no breaker opening" : ""}; reject-path p95 at most ${v.guardrails.maxRejectP95Ms === null ? "the policy's rejectP95 (default 50 ms)" : `${v.guardrails.maxRejectP95Ms} ms`}; on a breach: ${v.guardrails.pauseOnly ? "pause" : "pause and roll the cohort back"}`,
  ];
  if (v.lastCheck) {
    const c = v.lastCheck;
    lines.push(`  last check (${c.minute}): cohort ${pct(c.cohort.share)} of ${c.cohort.decisions}, control ${pct(c.control.share)} of ${c.control.decisions}, margin ${c.marginPoints.toFixed(1)} points: ${c.verdict.replaceAll("_", " ")}`);
  }
  if (v.approval) lines.push(`  waiting for approval: ${v.approval.id} (${v.approval.action}, requested by ${v.approval.requestedBy}); another user with publish rights runs \`sluice approvals approve ${v.approval.id}\``);
  if (v.reason) lines.push(`  ${v.state === "completed" ? "completed" : "why"}: ${v.reason}`);
  if (v.endedAt) lines.push(`  ended ${v.endedAt}`);
  return lines.join("\n");
}
