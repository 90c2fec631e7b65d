/**
 * DECIDE — decides one or more requests, each all-or-nothing, atomically, in one call (Lua 5.1,
 * Redis ≥ 7.0). It runs as a Redis Function ({@link DECIDE_LIBRARY}: loaded once per node, every
 * function defined once) and, where FUNCTION is not available, as a script (decideLua: EVALSHA).
 * Its request and reply are lib/store/lua/wire.ts, whose names the Lua below interpolates.
 *
 * The algorithm twins it calls are the files beside this one, each the Lua twin of the pure file
 * of the same name in lib/policy/algorithms (same verdicts and numbers, with Redis data structures
 * and a few shortcuts of their own, each said where it is); lib/policy/algorithms/*.int.test.ts
 * replay scenarios through both, with a test clock and on Redis server time.
 *
 * For each decision, phase 1 evaluates every check reading only; phase 2, if every check allows and
 * it is not a dry run, commits them all, and every key written gets its PEXPIRE in the same call.
 * The rules every check obeys whatever its algorithm (a cost its limit can never admit, shadow
 * mode, the accuracy meter's sample, the lease it hands out) are written once: `judge` (inlined
 * where a check is evaluated) and `answer`.
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
import { ARG, CODE, ERROR, FLAG, luaReasonCodes, OUT, OUTCOME_FIELDS, type OutcomeField, SHADOW, SHAPE } from "./wire";

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

/** What `answer` writes in each reply field of a check (OUTCOME_FIELDS, in their order), from its locals. */
const OUTCOME_LUA: Record<OutcomeField, string> = {
  code: `(allowed and ${CODE.allowed} or 0) + REASON_CODES[reason] * ${1 << CODE.reasonShift} + shadow * ${1 << CODE.shadowShift}`,
  remaining: "remaining",
  resetAt: "o.resetAt",
  wait: "wait",
  extra: "extra",
};
const slot = (field: OutcomeField) => `reply[m + ${OUT[field] + 1}]`;
/** Every check's fields; `extra` only for the limits that have one. */
const FIXED_FIELDS = OUTCOME_FIELDS.filter((f) => f !== "extra");

/**
 * A check's verdict once its algorithm has filled \`o\`: a cost its limit can never admit denies (no
 * wait to tell: nothing would be consumed), and a shadow limit that would deny lets it pass.
 * o.consumes: whether committing writes this counter; o.shadow: its shadow bits so far. Written
 * once here and inlined where MAIN evaluates a check (a Lua call per check costs more than these
 * few comparisons).
 */
const judge = (c: string, o: string) => `local maxCost = ${c}.maxCost
    if maxCost and cost > maxCost then
      ${o}.allowed, ${o}.reason, ${o}.retry, ${o}.delay, ${o}.remaining = false, 'cost_exceeds_limit', 0, 0, ${o}.idle
    end
    ${o}.consumes, ${o}.shadow = ${o}.allowed, 0
    if not ${o}.allowed and ${c}.shadow then
      ${o}.allowed, ${o}.reason, ${o}.retry, ${o}.delay, ${o}.shadow = true, 'ok', 0, 0, ${SHADOW.denied}
    end`;

const MAIN = `-- Tables every decision reuses (one decision at a time; cleared as they are refilled): a call
-- of many decisions allocates as little as it can, and Lua's GC has less to do.
local outcomes, undo, activity = {}, {}, {}
-- The call's decision shapes: {cost, dry, wantUndo, n, limits, fair, single, check}.
local shapes
-- The call's decisions: how many, the next one, the index of its first key, where its answer starts.
local callN, callNext, callKb, callStart

-- The reply, and its length (kept here: #reply is a search each time).
local reply, rn
${luaReasonCodes()}

-- A check's answer, written at the end of the reply once the decision is committed or not: the
-- accuracy meter's bits for a sampled subject (admitted by X: X allows and so does every other check
-- of the decision, \`others\`), the lease or overage it hands out, and what it shows as remaining.
local function answer(key, c, o, committed, others)
  local allowed, reason, shadow, remaining, extra = o.allowed, o.reason, o.shadow, o.idle, -1
  if o.exact ~= nil then
    shadow = shadow + ${SHADOW.sampled}
    if others and o.consumes then shadow = shadow + ${SHADOW.limitAdmitted} end
    if others and o.exact then
      shadow = shadow + ${SHADOW.exactAdmitted}
      exact_log_commit(key .. ':x', c, o.exactTotal)
    end
  end
  if committed then remaining, extra = o.remaining, o.overage end
  if c.alg == 'concurrency' then
    if committed then extra = c.token else extra = 0 end
  end
  local wait, m = allowed and o.delay or o.retry, rn
  ${FIXED_FIELDS.map(slot).join(", ")} = ${FIXED_FIELDS.map((f) => OUTCOME_LUA[f]).join(", ")}
  if c.extra then
    ${slot("extra")} = ${OUTCOME_LUA.extra}
    rn = m + ${OUT.extra + 1}
  else
    rn = m + ${OUT.extra}
  end
end

-- One decision of this shape, its checks' keys at KEYS[kb + 1 ..], in two phases.
-- (cost, dry and wantUndo are the shape's, set by run_decisions when the shape changes.)
local function decide(kb, shape)
  local n, cs = shape.n, shape.limits
  -- Phase 1: evaluate, reading only. Only a weighted global cap records activity.
  if shape.fair then for j = #activity, 1, -1 do activity[j] = nil end end
  local denying = 0
  for i = 1, n do
    local c, o, key = cs[i], outcomes[i], KEYS[kb + i]
    o.exact = nil
    if c.fair then fair_share(key, c, activity, o) else c.evaluate(key, c, o) end
    ${judge("c", "o")}
    if not o.allowed then denying = denying + 1 end
    -- The accuracy meter's sampled subjects: what an exact log of the same limit would decide.
    if c.sampled and not dry then o.exact, o.exactTotal = exact_log(key .. ':x', c) end
  end

  -- Phase 2: commit all or nothing; answer every check.
  if shape.fair and not dry then for _, f in ipairs(activity) do f() end end
  local commit = denying == 0 and not dry
  local head = rn
  if wantUndo then
    reply[head + 1], reply[head + 2] = denying == 0 and 1 or 0, 0
    rn = head + 2
  end
  local undoN = 0
  for i = 1, n do
    local c, o, key = cs[i], outcomes[i], KEYS[kb + i]
    local committed = commit and o.consumes
    if committed then
      local u
      if c.fair then u = fair_share_commit(key, c, o) else u = c.commit(key, c, o) end
      if wantUndo then
        for _, cmd in ipairs(u) do
          undoN = undoN + 1
          undo[undoN] = cmd
        end
      end
    end
    answer(key, c, o, committed, denying - (o.allowed and 0 or 1) == 0)
  end
  if wantUndo then
    -- Each undo command as its length and its words, after the outcomes.
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
    reply[head + 2] = words
  end
end

-- Decides from callNext on; stops at an error (main answers it and calls again from the next).
local function run_decisions(shapeAt)
  local many, last = #shapes > 1, nil
  while callNext <= callN do
    callStart = rn
    local shape = shapes[1]
    if many then shape = shapes[tonumber(ARGV[shapeAt + callNext])] end
    if shape ~= last then cost, dry, wantUndo, last = shape.cost, shape.dry, shape.wantUndo, shape end
    if shape.single then
      -- One committing check that is not a fair share (the usual /v1/check): the same rules without
      -- the two phases' bookkeeping, which a check alone does not need (its verdict is the
      -- decision's), and without a call. Measured in 128-decision calls: 0.1–0.2 µs of Redis per
      -- decision less than decide(), and within 0.1 µs of the separate one-check MAIN it replaced.
      local c, o, key = shape.check, outcomes[1], KEYS[callKb + 1]
      o.exact = nil
      c.evaluate(key, c, o)
      ${judge("c", "o")}
      if c.sampled then o.exact, o.exactTotal = exact_log(key .. ':x', c) end
      if o.consumes then c.commit(key, c, o) end
      answer(key, c, o, o.consumes, true)
    else
      decide(callKb, shape)
    end
    callKb = callKb + shape.n
    callNext = callNext + 1
  end
end

-- The call's limits and shapes (lib/store/lua/wire.ts), then its decisions one after the other:
-- each all-or-nothing on its own, the call atomic.
local function main()
  reply, rn = {now}, 1
  local S = tonumber(ARGV[${ARG.limits}])
  local limits = {}
  for j = 1, S do limits[j] = spec(ARGV[${ARG.limits} + j]) end
  local a = ${ARG.limits} + S + 1
  local H = tonumber(ARGV[a])
  a = a + 1
  shapes = {}
  for h = 1, H do
    local flags, n = tonumber(ARGV[a + ${SHAPE.flags}]), tonumber(ARGV[a + ${SHAPE.checks}])
    local cs, fair = {}, false
    for i = 1, n do
      local c = limits[tonumber(ARGV[a + ${SHAPE.limitIndexes} - 1 + i])]
      cs[i], fair = c, fair or c.fair
      if outcomes[i] == nil then outcomes[i] = {} end
    end
    shapes[h] = {
      cost = tonumber(ARGV[a + ${SHAPE.cost}]), dry = bit.band(flags, ${FLAG.dryRun}) ~= 0,
      wantUndo = bit.band(flags, ${FLAG.undo}) ~= 0, n = n, limits = cs, fair = fair,
      single = n == 1 and flags == 0 and not fair, check = cs[1],
    }
    a = a + ${SHAPE.limitIndexes} + n
  end
  -- The decisions, under one pcall: a decision that fails (a key of the wrong type…) answers its
  -- own error, not its neighbours', and the loop goes on with the next one.
  callN, callNext, callKb, callStart = tonumber(ARGV[${ARG.decisions}]), 1, 0, rn
  while true do
    local ok, err = pcall(run_decisions, a - 1)
    if ok then break end
    for j = rn, callStart + 1, -1 do reply[j] = nil end
    for j = #undo, 1, -1 do undo[j] = nil end
    if type(err) == 'table' then err = err.err or 'ERR script error' end
    reply[callStart + 1], reply[callStart + 2] = ${ERROR}, tostring(err)
    rn = callStart + 2
    local shape = shapes[1]
    if H > 1 then shape = shapes[tonumber(ARGV[a - 1 + callNext])] end
    callKb = callKb + shape.n
    callNext = callNext + 1
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

/** Everything but the entry point: the prelude, these algorithm twins, MAIN. */
function decideBody(parts: readonly string[]): string {
  return [PRELUDE_LUA, ...parts.map((p) => ALGORITHM_LUA[p]), algorithmsTable(parts), MAIN].join("\n");
}

/**
 * The DECIDE script (EVAL / EVALSHA) for decisions whose checks use these Lua parts (see
 * luaParts). A script's chunk runs whole on every call, so each holds only the algorithms its
 * decisions use. The Redis store sends these only where Redis Functions are not available
 * ({@link DECIDE_LIBRARY}).
 */
export function decideLua(parts: readonly string[]): string {
  return ["local KEYS, ARGV = KEYS, ARGV", decideBody(parts), `begin(ARGV[${ARG.now}])`, "return main()"].join("\n");
}

/** DECIDE with every algorithm (documentation and tests; the store sends the smaller scripts). */
export const DECIDE_LUA = decideLua(Object.keys(ALGORITHM_LUA).sort());

/**
 * DECIDE as a Redis Function library (Redis ≥ 7.0: FUNCTION LOAD once per node, then FCALL). A
 * script's chunk runs whole on every EVALSHA — every function of it defined again, every table
 * built again — which cost Redis more per call than the lean ceiling's whole script; a library is
 * run once when loaded, and each FCALL runs only its function (begin(), then MAIN). So the library
 * holds every algorithm, and one function, `<name>_decide`, with the same KEYS, ARGV and reply as
 * the scripts.
 *
 * The name carries a hash of the text, so Sluice versions that differ never replace each other's
 * library on a shared Redis (a rolling upgrade runs both). Loaded by the store when a node answers
 * "Function not found" (a new or restarted node, FUNCTION FLUSH), and only then is the call sent
 * again: nothing ran.
 */
function decideLibrary(): { name: string; code: string; decide: string } {
  const body = decideBody(Object.keys(ALGORITHM_LUA).sort());
  const name = `sluice_${createHash("sha1").update(body).digest("hex").slice(0, 12)}`;
  const code = [
    `#!lua name=${name}`,
    "local KEYS, ARGV",
    body,
    `redis.register_function('${name}_decide', function(keys, args)\n  KEYS, ARGV = keys, args\n  begin(args[${ARG.now}])\n  return main()\nend)`,
  ].join("\n");
  return { name, code, decide: `${name}_decide` };
}
export const DECIDE_LIBRARY = decideLibrary();
