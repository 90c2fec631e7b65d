/**
 * The Redis counter store: one DECIDE call per decision (lib/store/lua/decide.ts), all checks in
 * one round trip, Redis server TIME as the clock, every key with a TTL set in the same call.
 *
 * DECIDE is a Redis Function (FCALL). Only when a node answers "Function not found" (a new or
 * restarted node, FUNCTION FLUSH: nothing ran) is its library loaded (FUNCTION LOAD, on every
 * primary of a Cluster) and the call sent once more. Where FUNCTION is refused (Redis before 7.0,
 * an ACL without it) DECIDE runs as scripts by EVALSHA, repeated once as EVAL on NOSCRIPT. Nothing
 * else is ever retried: after a timeout the call may have run, and running it again would count
 * the request twice.
 *
 * Redis Cluster: a script may only touch keys of one hash slot. A tenant's counters share the tag
 * `{t:<tenant>}`, but a global cap lives in its own slot (`{g:<capId>}`), so a decision with global
 * caps spans slots. Then, and only then, all-or-nothing is kept by reservation and refund:
 *   1. each global cap's slot is checked and committed first (one script per slot);
 *      if one denies, the ones already committed are refunded and the rest is evaluated as a dry run;
 *   2. the tenant's slot is checked and committed in one script;
 *      if it denies, every global reservation is refunded (REFUND script, one per slot).
 * The one exception, and its bound: between step 1 and the refund (one round trip, tens of ms at
 * most: the command timeout), a global cap holds units for a request that will be denied. Other
 * requests on that cap can be denied for capacity that is then given back: at most the cost of the
 * decisions in flight at that moment, for at most one round trip; the final counters are exact
 * (a denied request consumes nothing once the refund ran). If the refund itself fails (Redis down),
 * the units stay counted until the window passes: it errs on the side of limiting.
 * On a standalone Redis none of this happens: every decision is one script.
 *
 * Coalescing (standalone Redis): the decisions that reach the store within one event-loop turn —
 * a batch request's hundred, or the concurrent requests of many connections — are sent as ONE
 * DECIDE call (at most MAX_DECISIONS_PER_CALL). The script decides them one after the other, each
 * all-or-nothing, atomically; a later one sees what an earlier one consumed, exactly as if they had
 * arrived one by one. This pays the script invocation, Redis TIME, command encoding and reply
 * parsing once per turn instead of once per decision. A decision whose script raises an error
 * (a key of the wrong type) fails alone: the script catches it per decision.
 */
import { createHash } from "node:crypto";
import { type Cluster, Command } from "ioredis";
import { isFunctionMissing, isNoScript, type RedisClient as Client } from "../redis/client";
import { DECIDE_LIBRARY, decideLua, hasExtraField, luaParts, OUTCOME_REPLY as R, OUTCOME_REPLY_FIELDS, REPLY_REASONS, SHADOW_BITS } from "./lua/decide";
import { checkSpec } from "./limit-spec";
import { REFUND_LUA } from "./lua/refund";
import { RELEASE_LUA } from "./lua/release";
import { SETTLE_LUA } from "./lua/settle";
import { ForgedLeaseError, formatLeaseId, newLeaseToken, parseLeaseId } from "./lease-id";
import { loopLateMaxMs, watchLoopDelay } from "../net/loop-delay";
import { deadline, withTimeout } from "../net/timeout";
import { keys as redisKeys } from "../redis/keys";
import { formatReservationId, parseReservationId, RESERVATION_TTL_MS } from "./reservation";
import { StoreTimeoutError, type CheckOptions, type CheckOutcome, type CounterStore, type LimitCheck, type SettleResult, type StoreDecision } from "./types";

export interface RedisStoreOptions {
  /**
   * TESTS ONLY: a clock whose value replaces Redis TIME inside the scripts (the `now` override
   * ARG), so parity tests can replay scenarios; keys then live 60 s past their windows, because
   * real time passes between the test clock's steps. Production never passes it: time is Redis time.
   */
  testClock?: () => number;
  /**
   * The longest a decision with a budget waits while Redis keeps answering (ms, default 1,000;
   * the decision server passes its command timeout). See budgetChunk.
   */
  maxWaitMs?: number;
}

export interface ScriptStats {
  /** DECIDE calls as Redis Functions (FCALL). */
  fcall: number;
  /** FUNCTION LOADs of the DECIDE library (a node that did not have it). */
  functionLoads: number;
  evalsha: number;
  /** EVAL fallbacks after NOSCRIPT. */
  eval: number;
}

export interface RedisCounterStore extends CounterStore {
  scriptStats(): ScriptStats;
}


interface Script {
  source: string;
  sha: string;
}

const script = (source: string): Script => ({ source, sha: createHash("sha1").update(source).digest("hex") });
const REFUND = script(REFUND_LUA);
const RELEASE = script(RELEASE_LUA);
const SETTLE = script(SETTLE_LUA);

/** DECIDE scripts by the algorithms they contain and their MAIN (a handful of distinct sets in practice). */
const decideScripts = new Map<string, DecideScript>();
/** A DECIDE script, with the Lua parts it was built from (to make its one-check twin). */
interface DecideScript extends Script {
  parts: readonly string[];
}
/** The DECIDE script of these Lua parts; `oneCheck`: its one-check variant (lib/store/lua/decide.ts ONE_CHECK_MAIN). */
function scriptForParts(parts: readonly string[], oneCheck = false): DecideScript {
  const id = parts.join(",") + (oneCheck ? "/one-check" : "");
  let s = decideScripts.get(id);
  if (!s) decideScripts.set(id, (s = { ...script(decideLua(parts, oneCheck)), parts }));
  return s;
}
/** Whether every decision of a call is one committing check that is not a fair share (DECIDE's one-check variant). */
function allOneCheck(batch: readonly DecisionInput[]): boolean {
  for (const d of batch) if (d.flags !== 0 || d.checks.length !== 1 || d.checks[0]!.fairShare) return false;
  return true;
}
/** The same, by the checks' algorithms in order (no Set, sort and join per decision). */
const decideScriptsByAlgorithms = new Map<string, DecideScript>();
function decideScript(checks: readonly LimitCheck[]): DecideScript {
  let algorithms = "";
  for (const c of checks) algorithms += (c.fairShare ? "fair_share" : c.algorithm) + (c.exactLog ? "+x," : ",");
  const known = decideScriptsByAlgorithms.get(algorithms);
  if (known) return known;
  const s = scriptForParts(luaParts(checks));
  if (decideScriptsByAlgorithms.size < 1_000) decideScriptsByAlgorithms.set(algorithms, s);
  return s;
}
/** The script for several decisions: theirs when they share one (the usual case), else the union. */
function batchScript(batch: readonly DecisionInput[]): DecideScript {
  const first = decideScript(batch[0]!.checks);
  for (let i = 1; i < batch.length; i++) {
    if (decideScript(batch[i]!.checks) !== first) return scriptForParts(luaParts(batch.flatMap((d) => d.checks)));
  }
  return first;
}
/** A check's limit string (lib/store/limit-spec.ts): the planner's when it made one; a concurrency check's carries a fresh lease token. */
function specOf(check: LimitCheck): string {
  if (check.algorithm === "concurrency") return checkSpec(check, newLeaseToken());
  return check.spec ?? checkSpec(check, "");
}

/**
 * The call's distinct limit strings and each check's index among them (1-based, as DECIDE reads
 * it): the decisions of one call mostly share their limits, and a limit string is ~80 bytes to
 * encode, send, parse and intern, where an index is one or two. A concurrency check's string
 * carries a fresh lease token, so it is its own.
 */
function limitStrings(): { specs: string[]; indexOf(check: LimitCheck): string } {
  const specs: string[] = [];
  const specIndex = new Map<string, number>();
  return {
    specs,
    indexOf(check) {
      const spec = specOf(check);
      let index = specIndex.get(spec);
      if (index === undefined) {
        specs.push(spec);
        specIndex.set(spec, (index = specs.length));
      }
      return String(index);
    },
  };
}

/** The hash tag of a key (what Redis Cluster hashes), or the whole key when it has none. */
export function hashTag(key: string): string {
  const open = key.indexOf("{");
  if (open >= 0) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) return key.slice(open + 1, close);
  }
  return key;
}

/** How many reply fields one check's outcome takes (OUTCOME_REPLY_FIELDS, plus `extra` for the limits that have it). */
export function outcomeWidth(check: LimitCheck): number {
  return hasExtraField(check) ? FIELDS_PER_OUTCOME + 1 : FIELDS_PER_OUTCOME;
}

/** One check's outcome from its fields of a DECIDE reply (OUTCOME_REPLY_FIELDS), starting at `at`. */
function readOutcome(raw: RawDecision, at: number, check: LimitCheck, cost: number): CheckOutcome {
  const code = raw[at + R.code] as number;
  const allowed = (code & 1) === 1;
  const wait = Number(raw[at + R.wait]);
  // Every field present (the optional ones undefined): one hidden class for every outcome.
  const outcome: CheckOutcome = {
    allowed,
    reason: REPLY_REASONS[(code >> 1) & 7]!,
    limit: check.limit,
    remaining: Number(raw[at + R.remaining]),
    resetAtMs: Number(raw[at + R.resetAt]),
    retryAfterMs: allowed ? 0 : wait,
    delayMs: allowed ? wait : 0,
    shadowDenied: undefined,
    leaseId: undefined,
    overage: undefined,
    accuracy: undefined,
  };
  const shadow = code >> 4;
  if (shadow !== 0) {
    if (shadow & SHADOW_BITS.shadowDenied) outcome.shadowDenied = true;
    if (shadow & SHADOW_BITS.sampled) {
      outcome.accuracy = { limitAdmitted: (shadow & SHADOW_BITS.limitAdmitted) !== 0, exactAdmitted: (shadow & SHADOW_BITS.exactAdmitted) !== 0 };
    }
  }
  if (hasExtraField(check)) {
    const extra = raw[at + FIELDS_PER_OUTCOME];
    if (check.algorithm === "concurrency") {
      if (extra) outcome.leaseId = formatLeaseId(String(extra), cost, check.key);
    } else {
      const overage = Number(extra);
      if (overage >= 0) outcome.overage = overage;
    }
  }
  return outcome;
}

function isCluster(redis: Client): redis is Cluster {
  return (redis as { isCluster?: boolean }).isCluster === true;
}

type UndoCommand = (string | number)[];
/** The undo list of a decision that asked for none (shared, never written to). */
const NO_UNDO: UndoCommand[] = [];
/** DECIDE's reply: nowMs, then per decision: [allowed, undo word count W when undo was asked for], the outcome fields of each check (OUTCOME_REPLY), [W words]. Bulk strings are Buffers (runDecide asks for the reply as it comes), or strings from a script. */
type RawDecision = (string | number | Buffer)[];
const FIELDS_PER_OUTCOME = OUTCOME_REPLY_FIELDS.length;

/** One decision as DECIDE takes it. flags: 0 commit, 1 dry run, 2 commit and return undo commands. */
interface DecisionInput {
  checks: readonly LimitCheck[];
  cost: number;
  flags: number;
}

/** One decision's result: what the store answers (a StoreDecision), and the commands that take its commit back (empty unless asked for). */
interface GroupResult extends StoreDecision {
  undo: UndoCommand[];
}

interface Pending extends DecisionInput {
  /** The decision's store budget (CheckOptions.timeoutMs); undefined: none. */
  timeoutMs: number | undefined;
  /** Answered (or timed out) already. */
  settled: boolean;
  resolve(result: GroupResult): void;
  reject(error: Error): void;
}

/**
 * Decisions that arrive within one event-loop turn go to Redis as one DECIDE call (each still
 * all-or-nothing): one script invocation, one TIME and one command to encode and parse for many
 * requests. Bounded so that one call never holds Redis for long.
 */
export const MAX_DECISIONS_PER_CALL = 128;
const MAX_CHECKS_PER_CALL = 1_024;

export function createRedisStore(redis: Client, options: RedisStoreOptions = {}): RedisCounterStore {
  const stats: ScriptStats = { fcall: 0, functionLoads: 0, evalsha: 0, eval: 0 };

  /**
   * Whether DECIDE runs as a Redis Function (lib/store/lua/decide.ts DECIDE_LIBRARY): null until a
   * load told; false where FUNCTION LOAD is refused (Redis before 7.0, an ACL without it), which
   * then runs the scripts, as EVALSHA.
   */
  let functions: boolean | null = null;
  /** The load in progress (every call that found the function missing waits for the same one). */
  let loading: Promise<boolean> | null = null;
  /** Loads the library on every primary (one node, standalone); true once it is there, false when refused. */
  function loadLibrary(): Promise<boolean> {
    loading ??= (async () => {
      const nodes = isCluster(redis) ? redis.nodes("master") : [redis];
      try {
        for (const node of nodes) {
          stats.functionLoads++;
          await node.function("LOAD", DECIDE_LIBRARY.code).catch((error: unknown) => {
            // Another process (or an earlier load of this one) got there first: the same text.
            if (!(error instanceof Error && error.message.includes("already exists"))) throw error;
          });
        }
        functions = true;
      } catch (error) {
        // Refused for good (no FUNCTION command, no permission): scripts from now on. Anything
        // else (the connection, a timeout) leaves it undecided: the next call tries again.
        if (error instanceof Error && /unknown command|NOPERM|unknown subcommand/i.test(error.message)) functions = false;
        else throw error;
      } finally {
        loading = null;
      }
      return functions === true;
    })();
    return loading;
  }

  /**
   * One DECIDE call: FCALL of the library's function; only when a node answers that it does not
   * have it (nothing ran) is the library loaded and the call sent again. Where functions are not
   * available, the script of these Lua parts by EVALSHA (run below).
   */
  async function runDecide(oneCheck: boolean, parts: () => readonly string[], keys: string[], args: string[]): Promise<unknown> {
    if (functions !== false) {
      const fn = oneCheck ? DECIDE_LIBRARY.decideOne : DECIDE_LIBRARY.decide;
      // A Command without a reply encoding: the reply as it comes (integers, and Buffers for the
      // rare lease token or error), without ioredis mapping every element of it into a new array
      // of strings. (callBuffer would do the same, but breaks under auto-pipelining.)
      const fcall = () => {
        stats.fcall++;
        const command = new Command("fcall", [fn, String(keys.length), ...keys, ...args]);
        void redis.sendCommand(command);
        return command.promise;
      };
      try {
        return await fcall();
      } catch (error) {
        if (!isFunctionMissing(error)) throw error;
      }
      if (await loadLibrary()) return await fcall();
    }
    return run(scriptForParts(parts(), oneCheck), keys, args);
  }

  async function run(s: Script, keys: string[], args: string[]): Promise<unknown> {
    stats.evalsha++;
    try {
      return await redis.evalsha(s.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      stats.eval++;
      return await redis.eval(s.source, keys.length, ...keys, ...args);
    }
  }

  const nowArg = () => (options.testClock ? String(options.testClock()) : "");

  async function releaseLease(leaseId: string): Promise<boolean> {
    const lease = parseLeaseId(leaseId);
    if (!lease) return false;
    const released = await run(RELEASE, [lease.key], [lease.token, String(lease.cost), nowArg()]);
    if (released === -1) throw new ForgedLeaseError();
    return released === 1;
  }
  /**
   * A decision whose reply came after its budget: its caller was answered without it (failed
   * open, or 503), so nobody holds the ids of the concurrency leases the script took. Left alone,
   * each would keep its tenant at the limit for the lease's whole TTL after a slow moment of Redis
   * (a 30 s lockout for a limit of 1). They are released as soon as the reply arrives. Counters the
   * script consumed stay consumed: the request did pass.
   */
  function giveBackLeases(result: { allowed: boolean; outcomes: readonly CheckOutcome[] }): void {
    if (!result.allowed) return;
    for (const o of result.outcomes) if (o.leaseId) releaseLease(o.leaseId).catch(() => undefined);
  }

  /** Runs several decisions in one DECIDE call; one result (or that decision's error) per decision, in order. */
  async function decideMany(batch: readonly DecisionInput[]): Promise<(GroupResult | Error)[]> {
    if (allOneCheck(batch)) return decideOneCheckEach(batch);
    const keys: string[] = [];
    const { specs, indexOf } = limitStrings();
    // Decision shapes (cost, flags, limit indexes): the decisions of a call mostly share one, so
    // a decision is first compared with the one before it, index by index.
    const shapeArgs: string[] = [];
    const shapeOf = new Map<string, number>();
    const shapes = new Array<number>(batch.length);
    let last: { cost: number; flags: number; indexes: string[]; shape: number } | null = null;
    for (let d = 0; d < batch.length; d++) {
      const { checks, cost, flags } = batch[d]!;
      const indexes = new Array<string>(checks.length);
      let same = last !== null && last.cost === cost && last.flags === flags && last.indexes.length === checks.length;
      for (let i = 0; i < checks.length; i++) {
        const c = checks[i]!;
        keys.push(c.key);
        indexes[i] = indexOf(c);
        if (same && indexes[i] !== last!.indexes[i]) same = false;
      }
      if (same) {
        shapes[d] = last!.shape;
        continue;
      }
      const id = `${cost}|${flags}|${indexes.join("|")}`;
      let shape = shapeOf.get(id);
      if (shape === undefined) {
        shapeArgs.push(String(cost), String(flags), String(checks.length), ...indexes);
        shapeOf.set(id, (shape = shapeOf.size + 1));
      }
      shapes[d] = shape;
      last = { cost, flags, indexes, shape };
    }
    const args = [nowArg(), String(batch.length), String(specs.length), ...specs, String(shapeOf.size), ...shapeArgs];
    if (shapeOf.size > 1) for (const shape of shapes) args.push(String(shape));
    const raw = (await runDecide(false, () => batchScript(batch).parts, keys, args)) as RawDecision;
    const nowMs = Number(raw[0]);
    const results: (GroupResult | Error)[] = new Array<GroupResult | Error>(batch.length);
    let at = 1;
    for (let d = 0; d < batch.length; d++) {
      const { checks, cost, flags } = batch[d]!;
      if (raw[at] === -1) {
        results[d] = new Error(String(raw[at + 1]));
        at += 2;
        continue;
      }
      // Undo commands asked for (flags 2, 3): allowed and the undo word count come first.
      const wantUndo = (flags & 2) !== 0;
      let undoWords = 0;
      if (wantUndo) {
        undoWords = Number(raw[at + 1]);
        at += 2;
      }
      let allowed = true;
      const outcomes = new Array<CheckOutcome>(checks.length);
      for (let i = 0; i < checks.length; i++) {
        const o = readOutcome(raw, at, checks[i]!, cost);
        if (!o.allowed) allowed = false;
        outcomes[i] = o;
        at += outcomeWidth(checks[i]!);
      }
      const undo: UndoCommand[] = wantUndo ? [] : NO_UNDO;
      for (const end = at + undoWords; at < end; ) {
        const length = Number(raw[at]);
        // Command names and keys come as Buffers (runDecide): the refund and settle replay strings.
        undo.push(raw.slice(at + 1, at + 1 + length).map((word) => (Buffer.isBuffer(word) ? word.toString() : word)));
        at += 1 + length;
      }
      results[d] = { nowMs, allowed, outcomes, undo };
    }
    return results;
  }

  /**
   * decideMany for a call of one-check committing decisions: DECIDE's one-check variant. The call
   * sends its distinct (limit string, cost) pairs once, then each decision's key — and its pair's
   * index only when there are several — and gets one outcome per decision back.
   */
  async function decideOneCheckEach(batch: readonly DecisionInput[]): Promise<(GroupResult | Error)[]> {
    const n = batch.length;
    const keys = new Array<string>(n);
    const specs: string[] = [];
    const costs: string[] = [];
    const pairOf = new Map<string, number>();
    const pairs = new Array<number>(n);
    /** One check per pair: the script holds the algorithms they need. */
    const distinct: LimitCheck[] = [];
    for (let d = 0; d < n; d++) {
      const { checks, cost } = batch[d]!;
      const c = checks[0]!;
      keys[d] = c.key;
      const spec = specOf(c);
      const id = cost === 1 ? spec : `${spec}#${cost}`;
      let pair = pairOf.get(id);
      if (pair === undefined) {
        specs.push(spec);
        costs.push(String(cost));
        distinct.push(c);
        pairOf.set(id, (pair = specs.length));
      }
      pairs[d] = pair;
    }
    const args = [nowArg(), String(n), String(specs.length), ...specs, ...costs];
    if (specs.length > 1) for (const p of pairs) args.push(String(p));
    const raw = (await runDecide(true, () => luaParts(distinct), keys, args)) as RawDecision;
    const nowMs = Number(raw[0]);
    const results = new Array<GroupResult | Error>(n);
    let at = 1;
    for (let d = 0; d < n; d++) {
      if (raw[at] === -1) {
        results[d] = new Error(String(raw[at + 1]));
        at += 2;
        continue;
      }
      const check = batch[d]!.checks[0]!;
      const outcome = readOutcome(raw, at, check, batch[d]!.cost);
      at += outcomeWidth(check);
      results[d] = { nowMs, allowed: outcome.allowed, outcomes: [outcome], undo: NO_UNDO };
    }
    return results;
  }

  async function decide(checks: readonly LimitCheck[], cost: number, dryRun: boolean, wantUndo = false): Promise<GroupResult> {
    const [result] = await decideMany([{ checks, cost, flags: (dryRun ? 1 : 0) + (wantUndo ? 2 : 0) }]);
    if (result instanceof Error) throw result;
    return result!;
  }

  // Coalescing (standalone Redis only: on a Cluster, one call must stay within one hash slot).
  let queue: Pending[] = [];
  /** When Redis last answered a DECIDE call of this store (performance.now()); -Infinity: never. */
  let lastAnswerAtMs = -Infinity;
  const maxWaitMs = options.maxWaitMs ?? 1_000;
  // Watching the event loop from the start (off the request path, lib/net/loop-delay.ts): the
  // first burst is judged with it too.
  watchLoopDelay();
  let scheduled = false;
  function flush(): void {
    scheduled = false;
    const pending = queue;
    queue = [];
    for (let from = 0; from < pending.length; ) {
      let to = from;
      let checks = 0;
      while (to < pending.length && to - from < MAX_DECISIONS_PER_CALL && (to === from || checks + pending[to]!.checks.length <= MAX_CHECKS_PER_CALL)) {
        checks += pending[to]!.checks.length;
        to++;
      }
      const chunk = from === 0 && to === pending.length ? pending : pending.slice(from, to);
      let answered = false;
      const cancel = budgetChunk(chunk, () => answered);
      decideMany(chunk).then(
        (results) => {
          lastAnswerAtMs = performance.now();
          answered = true;
          cancel();
          chunk.forEach((p, i) => {
            const r = results[i]!;
            if (p.settled) {
              // Timed out already: its caller was answered without this reply.
              if (!(r instanceof Error)) giveBackLeases(r);
              return;
            }
            p.settled = true;
            if (r instanceof Error) p.reject(r);
            else p.resolve(r);
          });
        },
        (error: unknown) => {
          answered = true;
          cancel();
          const e = error instanceof Error ? error : new Error(String(error));
          for (const p of chunk) {
            if (p.settled) continue;
            p.settled = true;
            p.reject(e);
          }
        },
      );
      from = to;
    }
  }
  /**
   * One deadline per script call, not one timer per request: it starts when the call is sent, so
   * the time a decision queued inside this process before that is not charged to the store, and
   * it is judged after the next I/O phase (lib/net/timeout.ts), so a reply that arrived while this
   * process was busy is read before anyone is timed out. Decisions without a budget (fail-closed
   * operations) keep waiting for the reply or the connection's command timeout.
   */
  function budgetChunk(chunk: readonly Pending[], answered: () => boolean): () => void {
    let budgetMs = Infinity;
    for (const p of chunk) if (p.timeoutMs !== undefined && p.timeoutMs < budgetMs) budgetMs = p.timeoutMs;
    if (budgetMs === Infinity) return () => undefined;
    const sentAtMs = performance.now();
    let cancel = () => undefined as void;
    let dueAtMs = sentAtMs + budgetMs;
    let judgedFromMs = sentAtMs;
    const expire = () => {
      const nowMs = performance.now();
      const waitedMs = nowMs - sentAtMs;
      // Two signs that a late answer is load, not the store failing — then keep waiting, one
      // budget at a time up to the longest any decision waits (maxWaitMs), instead of failing open:
      // - Redis answered one of our calls within the budget: it is up and working through what it
      //   was sent (this call is queued behind others);
      // - this process could not run on time by more than half the budget during this very wait
      //   (since it was sent or last judged: this deadline ran late, or the event loop stalled):
      //   it did not get the CPU, so neither, likely, did Redis on the same machine; the wait
      //   measured the machine, not the store. Only a stall inside the wait counts: one before it,
      //   or one already counted, says nothing about this reply (counting them kept every call
      //   of a hung Redis waiting 1 s on a machine whose loop stalls now and then).
      const starved = nowMs - dueAtMs > budgetMs / 2 || loopLateMaxMs(judgedFromMs) > budgetMs / 2;
      judgedFromMs = nowMs;
      const silentMs = starved ? 0 : nowMs - lastAnswerAtMs;
      let nextMs = Infinity;
      for (const p of chunk) {
        if (p.settled || p.timeoutMs === undefined) continue;
        const limitMs = p.timeoutMs < silentMs ? p.timeoutMs : Math.max(p.timeoutMs, maxWaitMs);
        if (limitMs <= waitedMs) {
          p.settled = true;
          p.reject(new StoreTimeoutError());
        } else {
          // Judge again when this one's limit is up or Redis has been silent for its budget.
          const next = Math.min(limitMs - waitedMs, Math.max(1, p.timeoutMs - silentMs));
          if (next < nextMs) nextMs = next;
        }
      }
      if (nextMs !== Infinity) {
        dueAtMs = nowMs + nextMs;
        cancel = deadline(nextMs, answered, expire);
      }
    };
    cancel = deadline(budgetMs, answered, expire);
    return () => cancel();
  }
  function decideCoalesced(checks: readonly LimitCheck[], cost: number, dryRun: boolean, timeoutMs: number | undefined, wantUndo = false): Promise<GroupResult> {
    return new Promise<GroupResult>((resolve, reject) => {
      queue.push({ checks, cost, flags: (dryRun ? 1 : 0) + (wantUndo ? 2 : 0), timeoutMs, settled: false, resolve, reject });
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
  }
  const coalesce = !isCluster(redis);

  async function refund(undo: UndoCommand[]): Promise<void> {
    if (undo.length === 0) return;
    const keys: string[] = [];
    const args: string[] = [];
    for (const [name, key, ...rest] of undo) {
      keys.push(String(key));
      args.push(String(name), String(rest.length), ...rest.map(String));
    }
    await run(REFUND, keys, args);
  }

  async function checkAcrossSlots(checks: readonly LimitCheck[], cost: number, dryRun: boolean, reserve: boolean): Promise<StoreDecision> {
    const groups = new Map<string, number[]>();
    checks.forEach((c, i) => {
      const tag = hashTag(c.key);
      groups.set(tag, [...(groups.get(tag) ?? []), i]);
    });
    const home = checks.find((c) => c.kind !== "global");
    const homeTag = home ? hashTag(home.key) : null;
    const order = [...groups.keys()].filter((t) => t !== homeTag);
    if (homeTag !== null) order.push(homeTag);

    const outcomes: CheckOutcome[] = new Array(checks.length);
    const reserved: UndoCommand[][] = [];
    let allowed = true;
    let nowMs = 0;
    for (const tag of order) {
      const idx = groups.get(tag)!;
      const r = await decide(idx.map((i) => checks[i]), cost, dryRun || !allowed, tag !== homeTag || reserve);
      nowMs = Math.max(nowMs, r.nowMs);
      idx.forEach((i, j) => (outcomes[i] = r.outcomes[j]));
      if (!r.allowed) allowed = false;
      else if (allowed && !dryRun) reserved.push(r.undo);
    }
    if (allowed && reserve && !dryRun) return { nowMs, allowed, outcomes, reservationId: await recordReservation(nowMs, cost, reserved.flat()) };
    if (!allowed && reserved.length > 0) {
      // Take back what the allowing slots committed; their outcomes then show nothing consumed.
      await Promise.all(reserved.map(refund));
      return { nowMs, allowed, outcomes: await idleOutcomes(checks, cost, outcomes) };
    }
    return { nowMs, allowed, outcomes };
  }

  // After a refund, report the allowing checks as a dry run sees them (nothing consumed).
  async function idleOutcomes(checks: readonly LimitCheck[], cost: number, outcomes: CheckOutcome[]): Promise<CheckOutcome[]> {
    return Promise.all(
      outcomes.map(async (o, i) => {
        if (!o.allowed) return o;
        const r = await decide([checks[i]], cost, true);
        const { leaseId: _lease, overage: _overage, ...rest } = o;
        return { ...rest, remaining: r.outcomes[0].remaining };
      }),
    );
  }

  /**
   * Writes a committed reservation's records (one per hash slot its commands touch, each with the
   * reservation TTL) and returns its id; undefined when nothing was committed. Written after the
   * DECIDE that committed: if this write fails, the request stays charged in full (never refunded).
   */
  async function recordReservation(nowMs: number, cost: number, undo: UndoCommand[]): Promise<string | undefined> {
    if (undo.length === 0) return undefined;
    const token = newLeaseToken();
    const bySlot = new Map<string, UndoCommand[]>();
    for (const cmd of undo) {
      const record = redisKeys.reservation(String(cmd[1]), token);
      bySlot.set(record, [...(bySlot.get(record) ?? []), cmd]);
    }
    try {
      await Promise.all(
        [...bySlot].map(([record, cmds]) => redis
            .multi()
            .hset(record, { c: String(cost), u: JSON.stringify(cmds), e: String(nowMs + RESERVATION_TTL_MS) })
            // With a test clock real time runs apart from the scenario's: `e` decides, the TTL only collects.
            .pexpire(record, RESERVATION_TTL_MS + (options.testClock ? 60 * 60_000 : 0))
            .exec(),
        ),
      );
    } catch {
      return undefined;
    }
    return formatReservationId(token, [...bySlot.keys()]);
  }

  async function settleRecord(record: string, actualCost: number): Promise<SettleResult> {
    const payload = await redis.hget(record, "u");
    if (payload === null) return { status: "unknown", reservedCost: 0, actualCost, refunded: 0 };
    const commandKeys = [...new Set((JSON.parse(payload) as UndoCommand[]).map((cmd) => String(cmd[1])))];
    const [status, reserved, actual, refunded] = (await run(SETTLE, [record, ...commandKeys], [String(actualCost), nowArg()])) as [SettleResult["status"], string, string, string];
    return { status, reservedCost: Number(reserved), actualCost: Number(actual), refunded: Number(refunded) };
  }

  /** check() for the rest: no checks (the clock alone), Redis Cluster, reservations. */
  async function checkOther(checks: readonly LimitCheck[], { cost, dryRun, timeoutMs, reserve = false }: CheckOptions): Promise<StoreDecision> {
    // A reply after the budget still gives back the leases it took (giveBackLeases).
    const budget = <T>(p: Promise<T>, late?: (value: T) => void) => {
      if (timeoutMs === undefined) return p;
      let timedOut = false;
      if (late) p.then((value) => timedOut && late(value), () => undefined);
      return withTimeout(p, timeoutMs, () => {
        timedOut = true;
        return new StoreTimeoutError();
      });
    };
    if (checks.length === 0) {
      const [s, us] = options.testClock ? [0, 0] : await budget(redis.time());
      return { nowMs: options.testClock ? options.testClock() : Number(s) * 1000 + Math.floor(Number(us) / 1000), allowed: true, outcomes: [] };
    }
    if (isCluster(redis) && new Set(checks.map((c) => hashTag(c.key))).size > 1) {
      // Several round trips: the budget covers them together (a timeout mid-way leaves reserved
      // global units counted until their window passes: it errs on the side of limiting).
      return budget(checkAcrossSlots(checks, cost, dryRun, reserve), giveBackLeases);
    }
    const wantUndo = reserve && !dryRun;
    const { nowMs, allowed, outcomes, undo } = coalesce
      ? await decideCoalesced(checks, cost, dryRun, timeoutMs, wantUndo)
      : await budget(decide(checks, cost, dryRun, wantUndo), giveBackLeases);
    if (allowed && wantUndo) return { nowMs, allowed, outcomes, reservationId: await recordReservation(nowMs, cost, undo) };
    return { nowMs, allowed, outcomes };
  }

  return {
    async settle(reservationId: string, actualCost: number): Promise<SettleResult> {
      const id = parseReservationId(reservationId);
      if (!id) return { status: "unknown", reservedCost: 0, actualCost, refunded: 0 };
      // One record per slot, each settled once on its own: a settle repeated after a partial
      // failure (Redis Cluster) finishes the slots still owed and replays the others.
      const results = await Promise.all(id.records.map((record) => settleRecord(record, actualCost)));
      const known = results.filter((r) => r.status !== "unknown");
      if (known.length === 0) return results[0]!;
      const pick = known.find((r) => r.status === "conflict") ?? known.find((r) => r.status === "settled") ?? known[0]!;
      return pick;
    },

    check(checks: readonly LimitCheck[], options: CheckOptions): Promise<StoreDecision> {
      // The usual call on a standalone Redis (no reservation to write after it): the coalesced
      // DECIDE's result is the answer itself, without another promise around it.
      if (coalesce && checks.length > 0 && !(options.reserve === true && !options.dryRun)) {
        return decideCoalesced(checks, options.cost, options.dryRun, options.timeoutMs, false);
      }
      return checkOther(checks, options);
    },

    release: releaseLease,

    scriptStats: () => ({ ...stats }),

    async close(): Promise<void> {
      // The client belongs to the caller (shared by the decision server); nothing of ours to close.
    },
  };
}
