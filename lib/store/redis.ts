/**
 * The Redis counter store: one Lua script per decision (lib/store/lua.ts), all checks in one round
 * trip, Redis server TIME as the clock, every key with a TTL set in the same script.
 *
 * Scripts run by EVALSHA; only on NOSCRIPT (the script is not loaded, so nothing ran) is the call
 * repeated once, as EVAL. Nothing else is ever retried: after a timeout the script may have run,
 * and running it again would count the request twice.
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
 */
import { createHash } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import { decideLua, luaParts, RELEASE_LUA, REFUND_LUA } from "./lua";
import { newLeaseToken, parseLeaseId, formatLeaseId } from "./lease-id";
import type { CheckOptions, CheckOutcome, CounterStore, LimitCheck, StoreDecision } from "./types";

export interface RedisStoreOptions {
  /**
   * TESTS ONLY: a clock whose value replaces Redis TIME inside the scripts (the `now` override
   * ARG), so parity tests can replay scenarios; keys then live 60 s past their windows, because
   * real time passes between the test clock's steps. Production never passes it: time is Redis time.
   */
  testClock?: () => number;
}

export interface ScriptStats {
  evalsha: number;
  /** EVAL fallbacks after NOSCRIPT. */
  eval: number;
}

export interface RedisCounterStore extends CounterStore {
  scriptStats(): ScriptStats;
}

type Client = Redis | Cluster;

interface Script {
  source: string;
  sha: string;
}

const script = (source: string): Script => ({ source, sha: createHash("sha1").update(source).digest("hex") });
const REFUND = script(REFUND_LUA);
const RELEASE = script(RELEASE_LUA);

/** DECIDE scripts by the algorithms they contain (a handful of distinct sets in practice). */
const decideScripts = new Map<string, Script>();
/** The same, by the checks' algorithms in order (no Set, sort and join per decision). */
const decideScriptsByAlgorithms = new Map<string, Script>();
function decideScript(checks: readonly LimitCheck[]): Script {
  let algorithms = "";
  for (const c of checks) algorithms += (c.fairShare ? "fair_share" : c.algorithm) + ",";
  const known = decideScriptsByAlgorithms.get(algorithms);
  if (known) return known;
  const parts = luaParts(checks);
  const id = parts.join(",");
  let s = decideScripts.get(id);
  if (!s) decideScripts.set(id, (s = script(decideLua(parts))));
  if (decideScriptsByAlgorithms.size < 1_000) decideScriptsByAlgorithms.set(algorithms, s);
  return s;
}
/** Fields per check in DECIDE's ARGV, in this order. */
export const ARGS_PER_CHECK = 13;

function checkArgs(check: LimitCheck, leaseToken: string): string[] {
  return [
    check.algorithm,
    String(check.limit),
    String(check.windowMs),
    String(check.burst),
    String(check.precision),
    check.mode,
    String(check.maxDelayMs),
    String(check.leaseTtlMs),
    check.period ?? "month",
    check.overage ?? "block",
    check.fairShare ? String(check.fairShare.weight) : "0",
    check.fairShare ? check.fairShare.member : "",
    leaseToken,
  ];
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

function isCluster(redis: Client): redis is Cluster {
  return (redis as { isCluster?: boolean }).isCluster === true;
}

type UndoCommand = (string | number)[];
/** DECIDE's reply: nowMs, allowed, 10 fields per check, then undo commands (length, words…). */
type RawDecision = (string | number)[];
const FIELDS_PER_OUTCOME = 10;

interface GroupResult {
  nowMs: number;
  allowed: boolean;
  outcomes: CheckOutcome[];
  undo: UndoCommand[];
}

export function createRedisStore(redis: Client, options: RedisStoreOptions = {}): RedisCounterStore {
  const stats: ScriptStats = { evalsha: 0, eval: 0 };

  async function run(s: Script, keys: string[], args: string[]): Promise<unknown> {
    stats.evalsha++;
    try {
      return await redis.evalsha(s.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
      stats.eval++;
      return await redis.eval(s.source, keys.length, ...keys, ...args);
    }
  }

  const nowArg = () => (options.testClock ? String(options.testClock()) : "");

  async function decide(checks: readonly LimitCheck[], cost: number, dryRun: boolean, wantUndo = false): Promise<GroupResult> {
    const tokens = checks.map((c) => (c.algorithm === "concurrency" ? newLeaseToken() : ""));
    const args = [nowArg(), String(cost), String((dryRun ? 1 : 0) + (wantUndo ? 2 : 0))];
    checks.forEach((c, i) => args.push(...checkArgs(c, tokens[i])));
    const raw = (await run(decideScript(checks), checks.map((c) => c.key), args)) as RawDecision;
    const outcomes = checks.map((check, i): CheckOutcome => {
      const o = raw.slice(2 + i * FIELDS_PER_OUTCOME, 2 + (i + 1) * FIELDS_PER_OUTCOME);
      const outcome: CheckOutcome = {
        allowed: o[0] === 1,
        reason: o[1] as CheckOutcome["reason"],
        limit: check.limit,
        remaining: Number(o[2]),
        resetAtMs: Number(o[4]),
        retryAfterMs: Number(o[5]),
        delayMs: Number(o[6]),
      };
      if (o[7] === 1) outcome.shadowDenied = true;
      if (Number(o[8]) >= 0) outcome.overage = Number(o[8]);
      if (o[9]) outcome.leaseId = formatLeaseId(String(o[9]), cost, check.key);
      return outcome;
    });
    const undo: UndoCommand[] = [];
    for (let at = 2 + checks.length * FIELDS_PER_OUTCOME; at < raw.length; ) {
      const length = Number(raw[at]);
      undo.push(raw.slice(at + 1, at + 1 + length));
      at += 1 + length;
    }
    return { nowMs: Number(raw[0]), allowed: raw[1] === 1, outcomes, undo };
  }

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

  async function checkAcrossSlots(checks: readonly LimitCheck[], cost: number, dryRun: boolean): Promise<StoreDecision> {
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
      const r = await decide(idx.map((i) => checks[i]), cost, dryRun || !allowed, tag !== homeTag);
      nowMs = Math.max(nowMs, r.nowMs);
      idx.forEach((i, j) => (outcomes[i] = r.outcomes[j]));
      if (!r.allowed) allowed = false;
      else if (allowed && !dryRun) reserved.push(r.undo);
    }
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

  return {
    async check(checks: readonly LimitCheck[], { cost, dryRun }: CheckOptions): Promise<StoreDecision> {
      if (checks.length === 0) {
        const [s, us] = options.testClock ? [0, 0] : await redis.time();
        return { nowMs: options.testClock ? options.testClock() : Number(s) * 1000 + Math.floor(Number(us) / 1000), allowed: true, outcomes: [] };
      }
      if (isCluster(redis) && new Set(checks.map((c) => hashTag(c.key))).size > 1) {
        return checkAcrossSlots(checks, cost, dryRun);
      }
      const { nowMs, allowed, outcomes } = await decide(checks, cost, dryRun);
      return { nowMs, allowed, outcomes };
    },

    async release(leaseId: string): Promise<boolean> {
      const lease = parseLeaseId(leaseId);
      if (!lease) return false;
      const released = await run(RELEASE, [lease.key], [lease.token, String(lease.cost), nowArg()]);
      return released === 1;
    },

    scriptStats: () => ({ ...stats }),

    async close(): Promise<void> {
      // The client belongs to the caller (shared by the decision server); nothing of ours to close.
    },
  };
}
