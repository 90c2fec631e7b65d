/**
 * One decision, pure: planDecision → a StoreDecision from whichever store the caller asks →
 * answerDecision. No I/O and no clock (time arrives as `nowMs`), so the same steps serve the engine
 * (./engine.ts, which puts the deny cache, the breaker and the counter store between them) and the
 * simulator and replay (`decideWith` over the in-process store on a simulated clock).
 */
import { limitsFor, type EffectiveLimits } from "../policy/effective-limits";
import type { CompiledPolicyBody } from "../policy/compiled";
import type { CounterStore, LimitCheck, StoreDecision } from "../store/types";
import { type AnswerContext, type AnswerFlags, answerFromStore, type DecisionAnswer, mostRestrictive, plainAnswer } from "./answer";
import { type ChecksInput, type PlannedCheck, planChecks } from "./checks";
import type { AccuracyEvent } from "./ports";

export interface PlanInput extends Omit<ChecksInput, "effective" | "nowMs"> {
  doc: CompiledPolicyBody;
  /** The version the answer names. */
  policyVersion: number;
  /** The tenant the key resolved to (or the request named); null: an unknown key. */
  tenant: string | null;
  /** The operation's name (`resolveOperation`), or `*`. */
  operation: string;
  /** The store's clock (ms): which overrides are live, and the tenant's quota periods around it. */
  nowMs: number;
  dryRun: boolean;
  explain: boolean;
  /** Which checks to keep (the simulator and replay leave out what their traffic cannot describe); absent: all. */
  keep?: (planned: PlannedCheck) => boolean;
}

/** What a decision asks of the store, or its answer when it needs no counter. */
export type DecisionPlan =
  | { needsStore: false; answer: DecisionAnswer; effective: EffectiveLimits | null }
  | { needsStore: true; ctx: AnswerContext; effective: EffectiveLimits; planned: PlannedCheck[]; checks: LimitCheck[]; dryRun: boolean; explain: boolean };

/** A decision's answer and what the accounting records of it. */
export interface Decided {
  answer: DecisionAnswer;
  /** The check that denied it (the one the answer names); null when it passed. */
  denied: Denial | null;
  /** The accuracy meter's samples of its sampled checks; null when none was sampled. */
  accuracy: AccuracyEvent[] | null;
}

/** What the answer names, before the tenant is known. */
export function answerContext(policyVersion: number, operation: string): AnswerContext {
  return { tenant: null, tier: null, operation, policyVersion };
}

export function planDecision(input: PlanInput): DecisionPlan {
  const ctx = answerContext(input.policyVersion, input.operation);
  const effective = input.tenant === null ? null : limitsFor(input.doc, input.tenant, input.operation, input.nowMs);
  if (!effective) return { needsStore: false, answer: plainAnswer(ctx, 401, "unknown_key"), effective: null };
  ctx.tenant = effective.tenant.slug;
  ctx.tier = effective.tier.name;
  if (effective.tenant.status === "suspended") return { needsStore: false, answer: plainAnswer(ctx, 403, "tenant_suspended"), effective };
  let planned = planChecks({ effective, keyHash: input.keyHash, ip: input.ip, accuracySample: input.accuracySample, prefix: input.prefix, nowMs: input.nowMs });
  if (input.keep) planned = planned.filter(input.keep);
  if (planned.length === 0) {
    const answer = plainAnswer(ctx, 200, "ok");
    if (input.dryRun) answer.dryRun = true;
    if (input.explain) answer.checks = [];
    return { needsStore: false, answer, effective };
  }
  const checks = new Array<LimitCheck>(planned.length);
  for (let i = 0; i < planned.length; i++) checks[i] = planned[i]!.check;
  return { needsStore: true, ctx, effective, planned, checks, dryRun: input.dryRun, explain: input.explain };
}

export interface AnswerOptions extends Pick<AnswerFlags, "degraded" | "reservationId"> {
  /** Whether the accuracy meter is on (its samples are looked for only then). */
  metered?: boolean;
}

/** The answer to a planned decision from the store's outcome (`planned`: its checks, as the store saw them). */
export function answerDecision(
  decision: { ctx: AnswerContext; explain: boolean; dryRun: boolean },
  outcome: StoreDecision,
  planned: readonly PlannedCheck[],
  options: AnswerOptions = {},
): Decided {
  const answer = answerFromStore(decision.ctx, outcome, planned, { explain: decision.explain, dryRun: decision.dryRun, degraded: options.degraded, reservationId: options.reservationId });
  return { answer, denied: denialOf(outcome, planned), accuracy: options.metered ? accuracyOf(outcome, planned) : null };
}

/** An answer that needed no store: nothing denied it by a check, nothing was sampled. */
export function decidedWithout(answer: DecisionAnswer): Decided {
  return { answer, denied: null, accuracy: null };
}

/** All three steps over a store that does not fail (the in-process one), with the limits selected (null: unknown tenant). */
export async function decideWith(store: CounterStore, input: PlanInput, cost: number): Promise<Decided & { effective: EffectiveLimits | null }> {
  const plan = planDecision(input);
  if (!plan.needsStore) return { ...decidedWithout(plan.answer), effective: plan.effective };
  return { ...answerDecision(plan, await store.check(plan.checks, { cost, dryRun: plan.dryRun }), plan.planned), effective: plan.effective };
}

/** The sampled checks' accuracy samples, by limit name (null when the decision had none). */
function accuracyOf(decision: StoreDecision, planned: readonly PlannedCheck[]): AccuracyEvent[] | null {
  let out: AccuracyEvent[] | null = null;
  for (let i = 0; i < decision.outcomes.length; i++) {
    const a = decision.outcomes[i]!.accuracy;
    if (a) (out ??= []).push({ limit: planned[i]!.name, limitAdmitted: a.limitAdmitted, exactAdmitted: a.exactAdmitted });
  }
  return out;
}

/** Which check denied a decision, for the usage aggregates: the one the answer names, so a decision counts for one limit at most. */
export interface Denial {
  /** Its RateLimit-Policy name. */
  limit: string;
  /** Its quota id when it is a quota. */
  quota: string | null;
}

/** The check that denied this store decision, or null when it passed. */
export function denialOf(decision: StoreDecision, planned: readonly PlannedCheck[]): Denial | null {
  if (decision.allowed) return null;
  const i = mostRestrictive(decision, planned);
  if (i === -1 || decision.outcomes[i]?.allowed !== false) return null;
  const p = planned[i]!;
  return { limit: p.name, quota: quotaIdOf(p) };
}

/** The `}:q:` that ends the hash tag in `keys.quota(tenant, quotaId)`: `<p>{t:<tenant>}:q:<quotaId>`. */
const QUOTA_KEY_MARK = "}:q:";

/** The quota id of a quota check (from its counter key), or null for any other kind of check. */
export function quotaIdOf(planned: PlannedCheck): string | null {
  if (planned.check.kind !== "quota") return null;
  const key = planned.check.key;
  const at = key.lastIndexOf(QUOTA_KEY_MARK);
  if (at === -1) return null;
  const id = key.slice(at + QUOTA_KEY_MARK.length);
  return id === "" ? null : id;
}
