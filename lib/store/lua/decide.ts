/**
 * DECIDE — decides one or more requests, each all-or-nothing, atomically, in one call (Lua 5.1,
 * Redis ≥ 7.0). It runs as a Redis Function ({@link DECIDE_LIBRARY}: loaded once per node, every
 * function defined once) and, where FUNCTION is not available, as a script (decideLua: EVALSHA).
 * The algorithm twins it calls are the files beside this one, each mirroring the pure file of the
 * same name in lib/policy/algorithms line for line; lib/policy/algorithms/*.int.test.ts replay
 * scenarios through both (with a test clock, and on Redis server time).
 *
 * KEYS: the base counter key of every check of every decision, in order. ARGV: [1] now override
 * in ms (empty in production: the clock is `redis.call('TIME')`; only tests pass it, to replay a
 * scenario), [2] the number of decisions, [3] the number S of distinct limit strings, then those S
 * limit strings (14 fields joined by `|`, see lib/store/limit-spec.ts), then the number H of
 * decision shapes and each shape: cost, flags (0 commit, 1 dry run, 2 commit and return undo
 * commands, 3 dry run), the number of its checks, and per check the index (1 … S) of its limit
 * string; then, only when H > 1, each decision's shape index (1 … H). The decisions of one call
 * mostly share their shape (one tier's limits for one operation), so a decision usually costs its
 * keys and nothing else. The Redis store sends the decisions that arrive in one event-loop turn as
 * one call. Keys with suffixes (window start, period label) are derived from the base key and keep
 * its hash tag, so they are in its slot.
 * The one-check variant ({@link ONE_CHECK_MAIN}) takes less: see there.
 *
 * For each decision, phase 1 evaluates every check reading only; phase 2, if every check allows and
 * it is not a dry run, commits them all, and every key written gets its PEXPIRE in the same call.
 *
 * Returns one flat array: nowMs, then per decision the {@link OUTCOME_REPLY_FIELDS} fields of each
 * check (the decision is allowed iff every check's is) — and, for a decision whose flags ask for
 * undo commands, first `allowed` and the number of undo words W, and after the outcomes the W
 * words: the commands that take the commit back, used only for the cross-slot refund on Redis
 * Cluster. A decision whose evaluation raised an error answers just `-1, message` instead (an
 * outcome's first field is never negative), and the next
 * decisions still run.
 */
import { createHash } from "node:crypto";
import { CONCURRENCY_LUA } from "./concurrency";
import { EXACT_LOG_LUA } from "./exact-log";
import { FAIR_SHARE_LUA } from "./fair-share";
import { FIXED_WINDOW_LUA } from "./fixed-window";
import { PRELUDE_LUA } from "./prelude";
import { QUOTA_LUA } from "./quota";
import { SLIDING_WINDOW_COUNTER_LUA } from "./sliding-window-counter";
import { SLIDING_WINDOW_LOG_LUA } from "./sliding-window-log";
import { TOKEN_BUCKET_LUA } from "./token-bucket";

/**
 * The fields DECIDE writes for each check, in this order (the store reads them by these offsets):
 * - code: whether the check allows (bit 0), the reason (its index in {@link REPLY_REASONS}, bits
 *   1–3) and the shadow bits ({@link SHADOW_BITS}, from bit 4): one integer, not three;
 * - remaining: units left after this request (or idle, when it consumed nothing);
 * - resetAt: ms (store clock) when the counter is back to full;
 * - wait: the retry wait (ms) when the check denies, the delay-mode wait (ms) when it allows (a
 *   check that allows never has a retry wait, one that denies never a delay);
 * - extra, only for the limits that can have one ({@link hasExtraField}): the concurrency lease
 *   token (0: none), or a billed quota's overage (-1: none).
 * All integers but a lease token: Redis answers them as integers, which the client reads without
 * making strings, and a check with nothing to say beyond them costs four of them.
 */
export const OUTCOME_REPLY_FIELDS = ["code", "remaining", "resetAt", "wait"] as const;
/** The reasons an outcome can give, by the index DECIDE answers. */
export const REPLY_REASONS = ["ok", "rate_limited", "quota_exhausted", "concurrency_limited", "cost_exceeds_limit"] as const;
const REASON_CODES_LUA = `local REASON_CODES = { ${REPLY_REASONS.map((r, i) => `${r} = ${i}`).join(", ")} }`;

/**
 * The shadow bits of `code` (from bit 4), so the accuracy meter adds nothing to an unsampled
 * check's reply: 1 a shadow limit that would have denied; 2 the accuracy meter sampled this check,
 * then 4 the limit admitted the request and 8 its exact log would have (lib/store/types.ts AccuracySample).
 */
export const SHADOW_BITS = { shadowDenied: 1, sampled: 2, limitAdmitted: 4, exactAdmitted: 8 } as const;
/** Offset of each field inside one check's slice of the reply. */
export const OUTCOME_REPLY = Object.fromEntries(OUTCOME_REPLY_FIELDS.map((name, i) => [name, i])) as {
  readonly [K in (typeof OUTCOME_REPLY_FIELDS)[number]]: number;
};

/** Whether a check's outcome carries the fifth field, `extra`: a concurrency limit's lease or a billed quota's overage (the Lua side: `c.extra` in the prelude). */
export function hasExtraField(check: { algorithm: string; overage?: string }): boolean {
  return check.algorithm === "concurrency" || (check.algorithm === "quota" && check.overage === "bill");
}

/** The Lua that writes one check's outcome fields at the end of `reply` (shared by both MAINs). */
const PUT_OUTCOME_LUA = `-- The reply, and its length (kept here: #reply is a search each time).
local reply, rn
-- One check's outcome fields (OUTCOME_REPLY_FIELDS, then extra for the limits that have it).
local function put(c, allowed, reason, remaining, resetAt, wait, shadow, lease, overage)
  local m = rn
  reply[m + 1], reply[m + 2], reply[m + 3], reply[m + 4] = (allowed and 1 or 0) + REASON_CODES[reason] * 2 + shadow * 16, remaining, resetAt, wait
  if c.extra then
    if c.alg == 'concurrency' then reply[m + 5] = lease else reply[m + 5] = overage end
    rn = m + 5
  else
    rn = m + 4
  end
end`;

/** Each algorithm's Lua twin, by the name DECIDE dispatches on (leaky_bucket runs token_bucket). */
const ALGORITHM_LUA: Record<string, string> = {
  fixed_window: FIXED_WINDOW_LUA,
  sliding_window_log: SLIDING_WINDOW_LOG_LUA,
  sliding_window_counter: SLIDING_WINDOW_COUNTER_LUA,
  token_bucket: TOKEN_BUCKET_LUA,
  concurrency: CONCURRENCY_LUA,
  quota: QUOTA_LUA,
  fair_share: FAIR_SHARE_LUA,
  exact_log: EXACT_LOG_LUA,
};

const MAIN = `-- Tables every decision reuses (one decision at a time; cleared as they are refilled): a call
-- of many decisions allocates as little as it can, and Lua's GC has less to do.
local outcomes, undo, activity = {}, {}, {}
-- The call's decision shapes: {cost, dry, wantUndo, n, {the n parsed limits}}.
local shapes
-- The call's decisions: how many, the next one, the index of its first key, where its answer starts.
local mainN, mainNext, mainKb, mainStart

-- One decision of this shape, its checks' keys at KEYS[kb + 1 ..].
local function decide_checks(kb, shape)
  cost, dry, wantUndo = shape[1], shape[2], shape[3]
  local n, cs = shape[4], shape[5]
  -- Phase 1: evaluate, reading only.
  local allAllowed, denying = true, 0
  for j = #activity, 1, -1 do activity[j] = nil end
  for i = 1, n do
    local c = cs[i]
    -- The check's outcome table, the same one for check i of every decision of the call.
    local o = outcomes[i]
    if o == nil then
      o = {}
      outcomes[i] = o
    end
    o.exact = nil
    if c.fair then
      fair_share(KEYS[kb + i], c, activity, o)
    else
      c.evaluate(KEYS[kb + i], c, o)
    end
    local maxCost = c.maxCost
    if maxCost and cost > maxCost then
      -- can never pass under this limit: no wait to tell, nothing would be consumed
      o.allowed, o.reason, o.retry, o.delay, o.remaining = false, 'cost_exceeds_limit', 0, 0, o.idle
    end
    -- consumes: whether committing writes this counter; shadow: a shadow limit that would have denied
    o.consumes, o.shadow = o.allowed, 0
    if not o.allowed and c.shadow then
      o.allowed, o.reason, o.retry, o.delay, o.shadow = true, 'ok', 0, 0, 1
    end
    if not o.allowed then allAllowed, denying = false, denying + 1 end
    -- The accuracy meter's sampled subjects: what an exact log of the same limit would decide.
    if c.sampled and not dry then o.exact, o.exactUsed = exact_log(KEYS[kb + i] .. ':x', c) end
  end

  -- Phase 2: commit all or nothing.
  local undoN = 0
  local doCommit = allAllowed and not dry
  if not dry then for _, f in ipairs(activity) do f() end end
  -- Flat (nested tables cost Redis a conversion each). Asked for undo commands: allowed and the
  -- count of undo words that follow the outcomes first. Then the outcome fields of every check
  -- (OUTCOME_REPLY_FIELDS; the decision is allowed iff every one is), then each undo command as its
  -- length and its words.
  local at = rn
  if wantUndo then
    reply[at + 1], reply[at + 2] = allAllowed and 1 or 0, 0
    rn = at + 2
  end
  for i = 1, n do
    local o, c = outcomes[i], cs[i]
    local committed = doCommit and o.consumes
    local lease = 0
    if committed then
      local u
      if c.fair then u = fair_share_commit(KEYS[kb + i], c, o) else u = c.commit(KEYS[kb + i], c, o) end
      if wantUndo then
        for _, cmd in ipairs(u) do
          undoN = undoN + 1
          undo[undoN] = cmd
        end
      end
      if c.alg == 'concurrency' then lease = c.token end
    end
    local remaining, overage = o.remaining, o.overage
    if not committed then remaining, overage = o.idle, -1 end
    local shadow = o.shadow
    if o.exact ~= nil then
      -- admitted by X: X allows and every other check of the decision does too
      local others = denying - (o.allowed and 0 or 1) == 0
      shadow = shadow + 2
      if others and o.consumes then shadow = shadow + 4 end
      if others and o.exact then
        shadow = shadow + 8
        exact_log_commit(KEYS[kb + i] .. ':x', c, o.exactUsed)
      end
    end
    put(c, o.allowed, o.reason, remaining, o.resetAt, o.allowed and o.delay or o.retry, shadow, lease, overage)
  end
  if wantUndo then
    local words = 0
    for j = 1, undoN do
      local cmd = undo[j]
      undo[j] = nil
      rn = rn + 1
      reply[rn] = #cmd
      for _, word in ipairs(cmd) do
        rn = rn + 1
        reply[rn] = word
      end
      words = words + 1 + #cmd
    end
    reply[at + 2] = words
  end
end

-- Decides from mainNext on; stops at an error (the caller answers it and calls again from the next).
local function run_main(shapeAt)
  local H = #shapes
  while mainNext <= mainN do
    mainStart = rn
    local shape = shapes[1]
    if H > 1 then shape = shapes[tonumber(ARGV[shapeAt + mainNext])] end
    decide_checks(mainKb, shape)
    mainKb = mainKb + shape[4]
    mainNext = mainNext + 1
  end
end

-- ARGV[2] decisions; ARGV[3] limit strings from ARGV[4]; then the number of shapes and each shape
-- (cost, flags, number of checks, one limit index per check); then, when there are several shapes,
-- each decision's shape index. Every decision is all-or-nothing on its own; the call runs them one
-- after the other, atomically.
local function main()
  reply, rn = {now}, 1
  local S = tonumber(ARGV[3])
  local limits = {}
  for j = 1, S do limits[j] = spec(ARGV[3 + j]) end
  local a = 5 + S
  shapes = {}
  for h = 1, tonumber(ARGV[4 + S]) do
    -- flags: 0 commit, 1 dry run, 2 commit and return undo commands, 3 dry run and undo (none).
    local flags, n = ARGV[a + 1], tonumber(ARGV[a + 2])
    local cs = {}
    for i = 1, n do cs[i] = limits[tonumber(ARGV[a + 2 + i])] end
    shapes[h] = {tonumber(ARGV[a]), flags == '1' or flags == '3', flags == '2' or flags == '3', n, cs}
    a = a + 3 + n
  end
  -- The decisions, under one pcall: a decision that fails (a key of the wrong type…) answers its
  -- own error, not its neighbours', and the loop goes on with the next one.
  mainN, mainNext, mainKb, mainStart = tonumber(ARGV[2]), 1, 0, rn
  while true do
    local ok, err = pcall(run_main, a - 1)
    if ok then break end
    for j = rn, mainStart + 1, -1 do reply[j] = nil end
    for j = #undo, 1, -1 do undo[j] = nil end
    if type(err) == 'table' then err = err.err or 'ERR script error' end
    reply[mainStart + 1], reply[mainStart + 2] = -1, tostring(err)
    rn = mainStart + 2
    local shape = shapes[1]
    if #shapes > 1 then shape = shapes[tonumber(ARGV[a - 1 + mainNext])] end
    mainKb = mainKb + shape[4]
    mainNext = mainNext + 1
  end
  return reply
end`;

/**
 * DECIDE for the common call: every decision has exactly one check, commits (no dry run, no undo
 * commands) and is not a fair share. What DECIDE's MAIN does per decision for all-or-nothing over
 * many counters (the two phases' tables, the cost ceiling and the shadow, exact-log and lease
 * rules worked out per check, the decision's own header) is here worked out once per distinct
 * limit and cost per call, and a decision is its outcome alone. The outcomes are the same, field
 * for field (lib/store/testing/conformance.ts and the algorithms' parity suites run through both).
 *
 * KEYS: one per decision. ARGV: [1] now override, [2] the number of decisions, [3] the number S of
 * distinct (limit string, cost) pairs, the S limit strings, their S costs, then — only when S > 1 —
 * each decision's pair index (1 … S): the usual call, many requests under one limit, sends each
 * request's counter key and nothing else. Returns nowMs, then per decision its outcome fields
 * ({@link OUTCOME_REPLY_FIELDS}; its allowed is the decision's), or `-1, message` for a decision
 * whose evaluation raised an error.
 */
const ONE_CHECK_MAIN = `-- Per distinct limit and cost of the call: its parsed string, its evaluator, the most one request
-- may cost under it, whether it is a shadow limit, sampled by the accuracy meter, a concurrency
-- limit, the cost, and its commit.
local pairsOfCall
-- The call's decisions: how many, the next one, where its outcome starts in the reply.
local oneN, oneNext, oneStart
-- The outcome table every decision of the variant fills in turn.
local oneOutcome = {}

local function decide_one(key, l)
  local c = l[1]
  cost = l[7]
  local o = oneOutcome
  l[2](key, c, o)
  if cost > l[3] then
    -- can never pass under this limit: no wait to tell, nothing would be consumed
    o.allowed, o.reason, o.retry, o.delay, o.remaining = false, 'cost_exceeds_limit', 0, 0, o.idle
  end
  local consumes, shadow = o.allowed, 0
  if not consumes and l[4] then
    o.allowed, o.reason, o.retry, o.delay, shadow = true, 'ok', 0, 0, 1
  end
  -- The accuracy meter's sampled subjects: what an exact log of the same limit would decide (the
  -- decision has no other check, so the limit's own answer is the decision's).
  if l[5] then
    local exact, used = exact_log(key .. ':x', c)
    shadow = shadow + 2
    if consumes then shadow = shadow + 4 end
    if exact then
      shadow = shadow + 8
      exact_log_commit(key .. ':x', c, used)
    end
  end
  local remaining, overage, lease = o.idle, -1, 0
  if consumes then
    l[8](key, c, o)
    remaining, overage = o.remaining, o.overage
    if l[6] then lease = c.token end
  end
  put(c, o.allowed, o.reason, remaining, o.resetAt, o.allowed and o.delay or o.retry, shadow, lease, overage)
end

-- Decides from oneNext on; stops at an error (the caller answers it and calls again from the next).
local function run_one()
  local S = #pairsOfCall
  local base = 3 + 2 * S
  while oneNext <= oneN do
    oneStart = rn
    if S == 1 then decide_one(KEYS[oneNext], pairsOfCall[1]) else decide_one(KEYS[oneNext], pairsOfCall[tonumber(ARGV[base + oneNext])]) end
    oneNext = oneNext + 1
  end
end

local function main_one()
  reply, rn = {now}, 1
  dry, wantUndo = false, false
  local S = tonumber(ARGV[3])
  pairsOfCall = {}
  for j = 1, S do
    local c = spec(ARGV[3 + j])
    pairsOfCall[j] = {c, c.evaluate, c.maxCost or math.huge, c.shadow, c.sampled, c.alg == 'concurrency', tonumber(ARGV[3 + S + j]), c.commit}
  end
  -- The decisions, under one pcall: a decision that fails (a key of the wrong type…) answers its
  -- own error, not its neighbours', and the loop goes on with the next one.
  oneN, oneNext, oneStart = tonumber(ARGV[2]), 1, rn
  while true do
    local ok, err = pcall(run_one)
    if ok then break end
    for j = oneStart + 5, oneStart + 1, -1 do reply[j] = nil end
    if type(err) == 'table' then err = err.err or 'ERR script error' end
    reply[oneStart + 1], reply[oneStart + 2] = -1, tostring(err)
    rn = oneStart + 2
    oneNext = oneNext + 1
  end
  return reply
end`;

/** The names of the Lua functions a decision with these algorithms needs, sorted (the script's cache key). */
export function luaParts(checks: readonly { algorithm: string; fairShare?: unknown; exactLog?: true }[]): string[] {
  const names = new Set<string>();
  for (const c of checks) {
    names.add(c.fairShare ? "fair_share" : c.algorithm === "leaky_bucket" ? "token_bucket" : c.algorithm);
    if (c.exactLog) names.add("exact_log");
  }
  return [...names].filter((n) => n in ALGORITHM_LUA).sort();
}

/** The algorithms table of these parts: each algorithm's evaluator and commit (leaky_bucket runs token_bucket's). */
function algorithmsTable(parts: readonly string[]): string {
  const entry = (name: string, fn: string) => `${name} = {${fn}, ${fn}_commit}`;
  const table = parts
    .filter((p) => p !== "fair_share" && p !== "exact_log")
    .map((p) => entry(p, p))
    .concat(parts.includes("token_bucket") ? [entry("leaky_bucket", "token_bucket")] : []);
  return `algorithms = { ${table.join(", ")} }`;
}

/** Everything but the entry point: the prelude, these algorithm twins, the reply writer, both MAINs' functions. */
function decideBody(parts: readonly string[]): string {
  return [PRELUDE_LUA, ...parts.map((p) => ALGORITHM_LUA[p]), algorithmsTable(parts), REASON_CODES_LUA, PUT_OUTCOME_LUA, MAIN, ONE_CHECK_MAIN].join("\n");
}

/**
 * The DECIDE script (EVAL / EVALSHA) for a decision whose checks use these Lua parts (see
 * luaParts); `oneCheck`: the variant for calls of one-check committing decisions
 * ({@link ONE_CHECK_MAIN}). A script's chunk runs whole on every call, so each holds only the
 * algorithms its decisions use. The Redis store sends these only where Redis Functions are not
 * available ({@link DECIDE_LIBRARY}).
 */
export function decideLua(parts: readonly string[], oneCheck = false): string {
  return ["local KEYS, ARGV = KEYS, ARGV", decideBody(parts), "begin(ARGV[1])", oneCheck ? "return main_one()" : "return main()"].join("\n");
}

/** DECIDE with every algorithm (documentation and tests; the store sends the smaller scripts). */
export const DECIDE_LUA = decideLua(Object.keys(ALGORITHM_LUA).sort());

/**
 * DECIDE as a Redis Function library (Redis ≥ 7.0: FUNCTION LOAD once per node, then FCALL). A
 * script's chunk runs whole on every EVALSHA — every function of it defined again, every table
 * built again — which cost Redis more per call than the lean ceiling's whole script; a library is
 * run once when loaded, and each FCALL runs only its function (begin(), then MAIN). So the library
 * holds every algorithm, and two functions: `<name>_decide` (MAIN) and `<name>_decide_one`
 * (ONE_CHECK_MAIN), with the same KEYS, ARGV and reply as the scripts.
 *
 * The name carries a hash of the text, so Sluice versions that differ never replace each other's
 * library on a shared Redis (a rolling upgrade runs both). Loaded by the store when a node answers
 * "Function not found" (a new or restarted node, FUNCTION FLUSH), and only then is the call sent
 * again: nothing ran.
 */
function decideLibrary(): { name: string; code: string; decide: string; decideOne: string } {
  const body = decideBody(Object.keys(ALGORITHM_LUA).sort());
  const name = `sluice_${createHash("sha1").update(body).digest("hex").slice(0, 12)}`;
  const entry = (fn: string, main: string) =>
    `redis.register_function('${fn}', function(keys, args)\n  KEYS, ARGV = keys, args\n  begin(args[1])\n  return ${main}()\nend)`;
  const code = [`#!lua name=${name}`, "local KEYS, ARGV", body, entry(`${name}_decide`, "main"), entry(`${name}_decide_one`, "main_one")].join("\n");
  return { name, code, decide: `${name}_decide`, decideOne: `${name}_decide_one` };
}
export const DECIDE_LIBRARY = decideLibrary();
