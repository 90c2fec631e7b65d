/** DECIDE's codec, pure: decisions → the call's KEYS and ARGV, the reply → one result per decision (format: lib/store/lua/wire.ts). */
import { formatLeaseId, newLeaseToken } from "../lease-id";
import { ARG, checkSpec, CODE, ERROR, FLAG, hasExtraField, OUT, OUTCOME_WIDTH, REASONS, SHADOW, SHAPE } from "../lua/wire";
import type { CheckOutcome, LimitCheck, StoreDecision } from "../types";

/** One decision as DECIDE takes it; `flags`: FLAG bits (0: commit). */
export interface DecisionInput {
  checks: readonly LimitCheck[];
  cost: number;
  flags: number;
}

/** A command that takes one commit back (`DECRBY key n`, `HINCRBY key field -n`, `ZREM key member…`). */
export type UndoCommand = (string | number)[];

/** One decision's result: the store's answer, and the commands that take its commit back (empty unless FLAG.undo). */
export interface DecisionResult extends StoreDecision {
  undo: UndoCommand[];
}

/** DECIDE's reply: integers, and Buffers for the rare lease token, undo word or error (the loader asks for the reply as it comes). */
export type Reply = (string | number | Buffer)[];

/** The undo list of a decision that asked for none (shared, never written to). */
const NO_UNDO: UndoCommand[] = [];

/** A check's limit string: the planner's when it made one; a concurrency check's carries a fresh lease token. */
function specOf(check: LimitCheck): string {
  if (check.algorithm === "concurrency") return checkSpec(check, newLeaseToken());
  return check.spec ?? checkSpec(check, "");
}

/**
 * The call's KEYS and ARGV. Each distinct limit string (~80 bytes to encode, send and parse) and
 * each distinct decision shape is sent once per call; a decision is first compared with the one
 * before it, index by index, and usually costs its keys alone.
 */
export function encodeDecide(batch: readonly DecisionInput[], nowArg: string): { keys: string[]; args: string[] } {
  const keys: string[] = [];
  const specs: string[] = [];
  const specIndex = new Map<string, string>();
  const shapeArgs: string[] = [];
  const shapeOf = new Map<string, number>();
  const shapes = new Array<number>(batch.length);
  /** The limit indexes of the decision being encoded (reused: a decision allocates nothing when it repeats the last shape). */
  const indexes: string[] = [];
  let last: { cost: number; flags: number; indexes: string[]; shape: number } | null = null;
  for (let d = 0; d < batch.length; d++) {
    const { checks, cost, flags } = batch[d]!;
    let same = last !== null && last.cost === cost && last.flags === flags && last.indexes.length === checks.length;
    for (let i = 0; i < checks.length; i++) {
      const c = checks[i]!;
      keys.push(c.key);
      const spec = specOf(c);
      let index = specIndex.get(spec);
      if (index === undefined) {
        specs.push(spec);
        specIndex.set(spec, (index = String(specs.length)));
      }
      indexes[i] = index;
      if (same && index !== last!.indexes[i]) same = false;
    }
    if (same) {
      shapes[d] = last!.shape;
      continue;
    }
    const own = indexes.slice(0, checks.length);
    const id = `${cost}|${flags}|${own.join("|")}`;
    let shape = shapeOf.get(id);
    if (shape === undefined) {
      const fields: string[] = [];
      fields[SHAPE.cost] = String(cost);
      fields[SHAPE.flags] = String(flags);
      fields[SHAPE.checks] = String(checks.length);
      shapeArgs.push(...fields, ...own);
      shapeOf.set(id, (shape = shapeOf.size + 1));
    }
    shapes[d] = shape;
    last = { cost, flags, indexes: own, shape };
  }
  const args: string[] = [];
  args[ARG.now - 1] = nowArg;
  args[ARG.decisions - 1] = String(batch.length);
  args[ARG.limits - 1] = String(specs.length);
  args.push(...specs, String(shapeOf.size), ...shapeArgs);
  if (shapeOf.size > 1) for (const shape of shapes) args.push(String(shape));
  return { keys, args };
}

/** One result (or that decision's error) per decision, in order. */
export function decodeDecide(raw: Reply, batch: readonly DecisionInput[]): (DecisionResult | Error)[] {
  const nowMs = Number(raw[0]);
  const results = new Array<DecisionResult | Error>(batch.length);
  let at = 1;
  for (let d = 0; d < batch.length; d++) {
    const { checks, cost, flags } = batch[d]!;
    if (raw[at] === ERROR) {
      results[d] = new Error(String(raw[at + 1]));
      at += 2;
      continue;
    }
    // With FLAG.undo, allowed and the undo word count come before the outcomes.
    const wantUndo = (flags & FLAG.undo) !== 0;
    const undoWords = wantUndo ? Number(raw[at + 1]) : 0;
    if (wantUndo) at += 2;
    let allowed = true;
    const outcomes = new Array<CheckOutcome>(checks.length);
    for (let i = 0; i < checks.length; i++) {
      const o = readOutcome(raw, at, checks[i]!, cost);
      if (!o.allowed) allowed = false;
      outcomes[i] = o;
      at += hasExtraField(checks[i]!) ? OUTCOME_WIDTH + 1 : OUTCOME_WIDTH;
    }
    const undo: UndoCommand[] = wantUndo ? [] : NO_UNDO;
    for (const end = at + undoWords; at < end; ) {
      const length = Number(raw[at]);
      // Command names and keys come as Buffers: the refund and settle replay strings.
      undo.push(raw.slice(at + 1, at + 1 + length).map((word) => (Buffer.isBuffer(word) ? word.toString() : word)));
      at += 1 + length;
    }
    results[d] = { nowMs, allowed, outcomes, undo };
  }
  return results;
}

/** One check's outcome from its fields of the reply, starting at `at`. */
export function readOutcome(raw: Reply, at: number, check: LimitCheck, cost: number): CheckOutcome {
  const code = raw[at + OUT.code] as number;
  const allowed = (code & CODE.allowed) !== 0;
  const wait = Number(raw[at + OUT.wait]);
  // Every field present (the optional ones undefined): one hidden class for every outcome.
  const outcome: CheckOutcome = {
    allowed,
    reason: REASONS[(code >> CODE.reasonShift) & CODE.reasonMask]!,
    limit: check.limit,
    remaining: Number(raw[at + OUT.remaining]),
    resetAtMs: Number(raw[at + OUT.resetAt]),
    retryAfterMs: allowed ? 0 : wait,
    delayMs: allowed ? wait : 0,
    shadowDenied: undefined,
    leaseId: undefined,
    overage: undefined,
    accuracy: undefined,
  };
  const shadow = code >> CODE.shadowShift;
  if (shadow !== 0) {
    if (shadow & SHADOW.denied) outcome.shadowDenied = true;
    if (shadow & SHADOW.sampled) outcome.accuracy = { limitAdmitted: (shadow & SHADOW.limitAdmitted) !== 0, exactAdmitted: (shadow & SHADOW.exactAdmitted) !== 0 };
  }
  if (hasExtraField(check)) {
    const extra = raw[at + OUT.extra];
    if (check.algorithm === "concurrency") {
      if (extra) outcome.leaseId = formatLeaseId(String(extra), cost, check.key);
    } else {
      const overage = Number(extra);
      if (overage >= 0) outcome.overage = overage;
    }
  }
  return outcome;
}
