/**
 * The decision answer and its headers, built from the store's outcomes (pure). The most restrictive
 * limit and the headers that describe it: docs/decision-api.md. On a denial `RateLimit-Reset`, `t`
 * and `Retry-After` are all its wait (whole seconds, rounded up), so the three agree.
 */
import type { Reason } from "../policy/types";
import type { CheckOutcome, StoreDecision } from "../store/types";
import { type PlannedCheck, policyHeaderOf, quoteName } from "./checks";

export interface ExplainedCheck {
  name: string;
  kind: string;
  scope: string;
  algorithm: string;
  mode: string;
  key: string;
  allowed: boolean;
  reason: string;
  limit: number;
  remaining: number;
  resetSeconds: number;
  retryAfterSeconds: number;
  delayMs: number;
  shadowDenied: boolean;
}

/** The answer of one decision. Its fields are always set in this order, the optional ones too, so every answer's JSON reads the same way. */
export interface DecisionAnswer {
  allowed: boolean;
  status: 200 | 401 | 403 | 429 | 503;
  reason: Reason;
  tenant: string | null;
  tier: string | null;
  operation: string | null;
  policyVersion: number;
  limit: number;
  remaining: number;
  resetSeconds: number;
  retryAfterSeconds: number;
  delayMs: number;
  headers: Record<string, string>;
  /** A shadow-mode limit would have denied (the request passed). */
  shadowDenied?: boolean;
  /** Decided without the counter store (failure mode open or local). */
  degraded?: boolean;
  /** Concurrency leases taken; release them with POST /v1/release. Comma-separated if several. */
  leaseId?: string;
  /** With `reserve: true`, on an allowed decision that committed something: the id POST /v1/settle takes. */
  reservationId?: string;
  dryRun?: boolean;
  /** With `explain: true`: every check and its counters. */
  checks?: ExplainedCheck[];
}

/** What an answer names, whatever decided it. */
export type AnswerContext = Pick<DecisionAnswer, "tenant" | "tier" | "operation" | "policyVersion">;

export function secondsCeil(ms: number): number {
  return ms <= 0 ? 0 : Math.ceil(ms / 1000);
}

/** An answer without counters (unknown key, suspended tenant, fail-closed, fail-open). */
export function plainAnswer(ctx: AnswerContext, status: DecisionAnswer["status"], reason: Reason): DecisionAnswer {
  return {
    allowed: status === 200,
    status,
    reason,
    tenant: ctx.tenant,
    tier: ctx.tier,
    operation: ctx.operation,
    policyVersion: ctx.policyVersion,
    limit: 0,
    remaining: 0,
    resetSeconds: 0,
    retryAfterSeconds: 0,
    delayMs: 0,
    headers: {},
  };
}

/** The index of the outcome the headers describe (the most restrictive limit), or -1 when none is enforced. */
export function mostRestrictive(decision: StoreDecision, planned: readonly PlannedCheck[]): number {
  const outcomes = decision.outcomes;
  let best = -1;
  if (!decision.allowed) {
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i]!;
      if (o.allowed || planned[i]?.check.mode === "shadow") continue;
      if (best === -1) {
        best = i;
        continue;
      }
      const b = outcomes[best]!;
      if (b.reason === "cost_exceeds_limit") continue;
      if (o.reason === "cost_exceeds_limit" || o.retryAfterMs > b.retryAfterMs) best = i;
    }
    if (best !== -1) return best;
  }
  for (let i = 0; i < outcomes.length; i++) {
    if (planned[i]?.check.mode === "shadow") continue;
    const o = outcomes[i]!;
    if (best === -1) best = i;
    else {
      const b = outcomes[best]!;
      if (o.remaining < b.remaining || (o.remaining === b.remaining && o.resetAtMs > b.resetAtMs)) best = i;
    }
  }
  return best;
}

function retryAfterMsOf(o: CheckOutcome): number {
  return o.reason === "cost_exceeds_limit" ? 0 : o.retryAfterMs;
}

export interface AnswerFlags {
  explain: boolean;
  dryRun: boolean;
  /** Decided without the counter store (failure mode `local`). */
  degraded?: boolean;
  /** With `reserve`: what POST /v1/settle takes. */
  reservationId?: string;
}

/** Builds the answer for a store decision. */
export function answerFromStore(ctx: AnswerContext, decision: StoreDecision, planned: readonly PlannedCheck[], options: AnswerFlags): DecisionAnswer {
  const i = mostRestrictive(decision, planned);
  if (i === -1) {
    // No enforced limit (only shadow ones, or none): no RateLimit headers, shadow denials flagged.
    return withOptionalFields(plainAnswer(ctx, 200, "ok"), decision.outcomes.some((o) => o.shadowDenied), null, decision, planned, options);
  }
  const o = decision.outcomes[i]!;
  const p = planned[i]!;
  const denied = !decision.allowed;
  const reason: Reason = denied ? o.reason : "ok";
  let retryAfterSeconds = 0;
  let resetSeconds = secondsCeil(o.resetAtMs - decision.nowMs);
  if (denied && o.reason !== "cost_exceeds_limit") {
    // A denial always tells the client when to come back; concurrency frees at an unknown time.
    retryAfterSeconds = Math.max(1, secondsCeil(retryAfterMsOf(o)));
    resetSeconds = retryAfterSeconds;
  }
  const remaining = Math.max(0, denied ? 0 : Math.floor(o.remaining));
  const headers: Record<string, string> = {
    "RateLimit-Limit": String(o.limit),
    "RateLimit-Remaining": String(remaining),
    "RateLimit-Reset": String(resetSeconds),
  };
  if (retryAfterSeconds > 0) headers["Retry-After"] = String(retryAfterSeconds);
  // Built once per plan for the check's own limit (the store answers with it).
  headers["RateLimit-Policy"] = p.policyHeader !== undefined && o.limit === p.check.limit ? p.policyHeader : policyHeaderOf(p.name, o.limit, p.windowSeconds);
  headers["RateLimit"] = `${quoteName(p.name)};r=${remaining};t=${resetSeconds}`;

  let delayMs = 0;
  let shadowDenied = false;
  let leases: string[] | null = null;
  for (const out of decision.outcomes) {
    if (out.shadowDenied) shadowDenied = true;
    if (!denied) {
      if (out.delayMs > delayMs) delayMs = out.delayMs;
      if (out.leaseId) (leases ??= []).push(out.leaseId);
    }
  }
  const answer: DecisionAnswer = {
    allowed: !denied,
    status: denied ? 429 : 200,
    reason,
    tenant: ctx.tenant,
    tier: ctx.tier,
    operation: ctx.operation,
    policyVersion: ctx.policyVersion,
    limit: o.limit,
    remaining,
    resetSeconds,
    retryAfterSeconds,
    delayMs: Math.ceil(delayMs),
    headers,
  };
  return withOptionalFields(answer, shadowDenied, leases, decision, planned, options);
}

/** Sets the optional fields that apply, in DecisionAnswer's order. */
function withOptionalFields(
  answer: DecisionAnswer,
  shadowDenied: boolean,
  leases: string[] | null,
  decision: StoreDecision,
  planned: readonly PlannedCheck[],
  options: AnswerFlags,
): DecisionAnswer {
  if (shadowDenied) answer.shadowDenied = true;
  if (options.degraded) answer.degraded = true;
  if (leases !== null) answer.leaseId = leases.join(",");
  if (options.reservationId !== undefined) answer.reservationId = options.reservationId;
  if (options.dryRun) answer.dryRun = true;
  if (options.explain) answer.checks = explainChecks(decision, planned);
  return answer;
}

function explainChecks(decision: StoreDecision, planned: readonly PlannedCheck[]): ExplainedCheck[] {
  return decision.outcomes.map((out, j) => {
    const pc = planned[j]!;
    return {
      name: pc.name,
      kind: pc.check.kind,
      scope: pc.scope,
      algorithm: pc.check.algorithm,
      mode: pc.check.mode,
      key: pc.check.key,
      allowed: out.allowed,
      reason: out.reason,
      limit: out.limit,
      remaining: Math.max(0, Math.floor(out.remaining)),
      resetSeconds: secondsCeil(out.resetAtMs - decision.nowMs),
      retryAfterSeconds: secondsCeil(retryAfterMsOf(out)),
      delayMs: Math.ceil(out.delayMs),
      shadowDenied: out.shadowDenied === true,
    };
  });
}

