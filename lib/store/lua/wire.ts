/**
 * DECIDE's wire format, written once as the tables below: the codec (lib/store/redis/codec.ts) and the
 * generated Lua (decide.ts, prelude.ts) both use these names, so neither spells an offset, a field order
 * or a bit of its own, and lib/store/redis/codec.int.test.ts runs both ends against each other.
 *
 * Request. KEYS: the base counter key of every check of every decision, in order (suffixed keys are
 * derived from it in Lua and keep its hash tag). ARGV (1-based, as Lua reads it):
 *   ARG.now        now override in ms: '' in production (Redis TIME); tests pass their own clock
 *   ARG.decisions  N, the number of decisions
 *   ARG.limits     S, the number of distinct limit strings, then the S strings (LIMIT_FIELDS)
 *   then H, the number of decision shapes, then each shape (SHAPE: cost, flags, checks n, then n
 *   limit indexes 1…S), then — only when H > 1 — each decision's shape index 1…H.
 *
 * Reply: one flat array (nested tables cost Redis a conversion each): nowMs, then per decision
 *   - ERROR, message: its evaluation raised an error (a key of the wrong type); the next run;
 *   - otherwise, with FLAG.undo: allowed (1/0) and W, the number of undo words after its outcomes;
 *   - the OUTCOME_FIELDS of each check (`extra` only where hasExtraField);
 *   - the W undo words: each command as its length and its words (the Cluster cross-slot refund).
 */
import { encodeQuotaWindow } from "../../policy/quota-window";
import type { Reason } from "../../policy/types";
import type { LimitCheck } from "../types";

export const ARG = { now: 1, decisions: 2, limits: 3 } as const;

/** One decision shape after H: these fields from its first slot, then one limit index per check. */
export const SHAPE = { cost: 0, flags: 1, checks: 2, limitIndexes: 3 } as const;

/** A shape's flags (bits): evaluate without committing; return the commands that take the commit back. */
export const FLAG = { dryRun: 1, undo: 2 } as const;

/** A decision whose evaluation raised an error answers this, then the message (an outcome's first field is never negative). */
export const ERROR = -1;

/**
 * The integers (neither end makes or parses strings) DECIDE answers for each check, in order:
 * - code: allowed, the reason and the shadow bits in one integer (CODE);
 * - remaining: units left after this request (or idle, when it consumed nothing);
 * - resetAt: ms (store clock) when the counter is back to full;
 * - wait: ms, the retry wait when the check denies, the delay-mode wait when it allows;
 * - extra, only for the limits that have one (hasExtraField): the concurrency lease token (0: none),
 *   or a billed quota's overage (-1: none).
 */
export const OUTCOME_FIELDS = ["code", "remaining", "resetAt", "wait", "extra"] as const;
export type OutcomeField = (typeof OUTCOME_FIELDS)[number];
/** Offset of each field in one check's slice of the reply. */
export const OUT = Object.fromEntries(OUTCOME_FIELDS.map((name, i) => [name, i])) as { readonly [K in OutcomeField]: number };
/** Fields of a check without `extra`. */
export const OUTCOME_WIDTH = OUT.extra;

/** The reasons an outcome can give, by the index `code` carries. */
export const REASONS = ["ok", "rate_limited", "quota_exhausted", "concurrency_limited", "cost_exceeds_limit"] as const satisfies readonly Reason[];

/** `code`'s parts: bit 0 allowed, the reason's index in REASONS from bit reasonShift (reasonMask wide), SHADOW from bit shadowShift. */
export const CODE = { allowed: 1, reasonShift: 1, reasonMask: 7, shadowShift: 4 } as const;

/** `code`'s shadow bits: a shadow limit would have denied; the check was sampled, then its AccuracySample (lib/store/types.ts). */
export const SHADOW = { denied: 1, sampled: 2, limitAdmitted: 4, exactAdmitted: 8 } as const;

/** Whether a check's outcome carries `extra`: a concurrency limit's lease, or an `overage: bill` quota's overage (Lua: `c.extra`). */
export function hasExtraField(check: { algorithm: string; overage?: string }): boolean {
  return check.algorithm === "concurrency" || (check.algorithm === "quota" && check.overage === "bill");
}

/**
 * A limit as one ARGV string: these fields in order, each followed by `|` (none can hold one), which
 * is shorter to encode and send than an argument per field, and which DECIDE parses once per call.
 * `lua`: the field's name on the parsed limit (`c.<lua>`); `number`: parsed with tonumber at once.
 */
interface LimitField {
  lua: string;
  number?: true;
  of: (check: Omit<LimitCheck, "key" | "spec">, leaseToken: string) => string | number;
}
export const LIMIT_FIELDS: readonly LimitField[] = [
  { lua: "alg", of: (c) => c.algorithm },
  { lua: "limit", number: true, of: (c) => c.limit },
  { lua: "window", number: true, of: (c) => c.windowMs },
  { lua: "burst", of: (c) => c.burst },
  { lua: "precision", of: (c) => c.precision },
  { lua: "mode", of: (c) => c.mode },
  { lua: "maxDelay", of: (c) => c.maxDelayMs },
  { lua: "leaseTtl", of: (c) => c.leaseTtlMs },
  { lua: "period", of: (c) => c.period ?? "month" },
  { lua: "overage", of: (c) => c.overage ?? "block" },
  { lua: "weight", of: (c) => (c.fairShare ? c.fairShare.weight : 0) },
  { lua: "member", of: (c) => (c.fairShare ? c.fairShare.member : "") },
  { lua: "token", of: (_c, leaseToken) => leaseToken },
  { lua: "exact", of: (c) => (c.exactLog ? "1" : "") },
  // a tenant quota's two billing periods (encodeQuotaWindow); '' for a quota without a window and other checks
  { lua: "win", of: (c) => (c.quotaWindow ? encodeQuotaWindow(c.quotaWindow) : "") },
];

/** A check's limit string (LIMIT_FIELDS); pure, so lib/decision/checks.ts makes it once per plan row (`LimitCheck.spec`). */
export function checkSpec(check: Omit<LimitCheck, "key" | "spec">, leaseToken: string): string {
  let spec = "";
  for (const field of LIMIT_FIELDS) spec += `${field.of(check, leaseToken)}|`;
  return spec;
}

/** The Lua table fields of a parsed limit string, `f` its parts in order: `alg = f[1], limit = tonumber(f[2]), …`. */
export function luaLimitFields(): string {
  return LIMIT_FIELDS.map((field, i) => `${field.lua} = ${field.number ? `tonumber(f[${i + 1}])` : `f[${i + 1}]`}`).join(", ");
}

/** REASONS as a Lua table, reason word → the index `code` carries. */
export function luaReasonCodes(): string {
  return `local REASON_CODES = { ${REASONS.map((r, i) => `${r} = ${i}`).join(", ")} }`;
}
