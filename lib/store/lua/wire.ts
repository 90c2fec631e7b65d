/**
 * DECIDE's wire format, written once: what the Redis store sends (KEYS, ARGV, the limit string) and
 * what DECIDE answers, as the tables below. Both ends are made from them: the TypeScript codec
 * (lib/store/redis/codec.ts) writes and reads by these names and offsets, and the Lua that reads
 * and writes the other end (lib/store/lua/decide.ts, prelude.ts) is generated with the same names
 * interpolated (`${OUT.code}`, `${SHADOW.sampled}`, luaLimitFields), so neither side spells an offset,
 * a field order or a bit of its own. lib/store/redis/codec.int.test.ts runs what the codec writes
 * through the generated Lua on a real Redis and reads the reply back.
 *
 * Request. KEYS: the base counter key of every check of every decision, in order (keys with
 * suffixes — a window start, a period — are derived from it in Lua and keep its hash tag).
 * ARGV (1-based, as Lua reads it):
 *   ARG.now        now override in ms: '' in production (the clock is Redis TIME); tests replay
 *                  scenarios with their own clock
 *   ARG.decisions  N, the number of decisions
 *   ARG.limits     S, the number of distinct limit strings, then the S strings (LIMIT_FIELDS)
 *   then H, the number of decision shapes, then each shape (SHAPE: cost, flags, checks n, then n
 *   limit indexes 1…S), then — only when H > 1 — each decision's shape index 1…H. The decisions of
 *   one call mostly share one shape (one tier's limits for one operation), so a decision usually
 *   costs its keys and nothing else; a limit string (~80 bytes) is sent once per call.
 *
 * Reply: one flat array (nested tables cost Redis a conversion each): nowMs, then per decision
 *   - ERROR, message: its evaluation raised an error (a key of the wrong type); the next run;
 *   - otherwise, when its flags ask for undo commands (FLAG.undo): allowed (1/0) and W, the number
 *     of undo words that follow its outcomes;
 *   - the OUTCOME fields of each check (the decision is allowed iff every check's is), plus `extra`
 *     for the limits that have one (hasExtraField);
 *   - the W undo words: each command as its length and its words (the Cluster cross-slot refund).
 */
import { encodeQuotaWindow } from "../../policy/quota-window";
import type { Reason } from "../../policy/types";
import type { LimitCheck } from "../types";

/** ARGV's head. */
export const ARG = { now: 1, decisions: 2, limits: 3 } as const;

/** One decision shape after H: these fields from its first slot, then one limit index per check. */
export const SHAPE = { cost: 0, flags: 1, checks: 2, limitIndexes: 3 } as const;

/** A shape's flags (bits): evaluate without committing; return the commands that take the commit back. */
export const FLAG = { dryRun: 1, undo: 2 } as const;

/** A decision whose evaluation raised an error answers this, then the message (an outcome's first field is never negative). */
export const ERROR = -1;

/**
 * The integers DECIDE answers for each check, in this order (OUT: their offsets). All integers
 * (Redis answers them without making strings, the client reads them without parsing), and a check
 * with nothing more to say costs four:
 * - code: allowed, the reason and the shadow bits in one integer (CODE);
 * - remaining: units left after this request (or idle, when it consumed nothing);
 * - resetAt: ms (store clock) when the counter is back to full;
 * - wait: the retry wait (ms) when the check denies, the delay-mode wait when it allows (a check
 *   that allows never has a retry wait, one that denies never a delay);
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

/**
 * `code`'s parts: bit 0 allowed (CODE.allowed), the reason's index in REASONS from bit
 * CODE.reasonShift (CODE.reasonMask wide), the shadow bits (SHADOW) from bit CODE.shadowShift.
 */
export const CODE = { allowed: 1, reasonShift: 1, reasonMask: 7, shadowShift: 4 } as const;

/**
 * The shadow bits of `code`, so that the accuracy meter adds nothing to an unsampled check's reply:
 * a shadow limit would have denied; the accuracy meter sampled this check, and then whether the
 * limit admitted the request and whether its exact log would have (lib/store/types.ts AccuracySample).
 */
export const SHADOW = { denied: 1, sampled: 2, limitAdmitted: 4, exactAdmitted: 8 } as const;

/** Whether a check's outcome carries `extra`: a concurrency limit's lease, or an `overage: bill` quota's overage (Lua: `c.extra`). */
export function hasExtraField(check: { algorithm: string; overage?: string }): boolean {
  return check.algorithm === "concurrency" || (check.algorithm === "quota" && check.overage === "bill");
}

/**
 * A limit as one ARGV string: these fields in this order, each followed by `|` (none can hold a
 * `|`: numbers, enum words, a tenant slug, a hex lease token). One string instead of fourteen
 * arguments keeps the command short to encode and send, and DECIDE parses each distinct limit once
 * per call. `lua`: the field's name on the parsed limit (`c.<lua>` in every algorithm twin);
 * `number`: parsed with tonumber at once (the rest stay strings until an algorithm needs them).
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
  // '1' for a subject the accuracy meter samples (LimitCheck.exactLog)
  { lua: "exact", of: (c) => (c.exactLog ? "1" : "") },
  // a tenant quota's two billing periods (encodeQuotaWindow in lib/policy/quota-window.ts); '' for
  // every other check and a quota on the UTC calendar without a window
  { lua: "win", of: (c) => (c.quotaWindow ? encodeQuotaWindow(c.quotaWindow) : "") },
];

/**
 * A check's limit string (LIMIT_FIELDS). Pure, so whoever builds checks in bulk
 * (lib/decision/checks.ts, once per plan row) makes it once and puts it in `LimitCheck.spec`; the
 * Redis store makes it itself when a check has none (a concurrency check's carries a fresh token).
 */
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
