/**
 * DECIDE — decides one or more requests, each all-or-nothing, atomically, in one call (Lua 5.1,
 * Redis ≥ 7.0), as a Redis Function ({@link DECIDE_LIBRARY}) or, where FUNCTION is refused, a script
 * (decideLua); request and reply: ./wire.ts. Beside it, the Lua twins of lib/policy/algorithms/*.ts,
 * proven equal to them by lib/policy/algorithms/*.int.test.ts.
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
const FIXED_FIELDS = OUTCOME_FIELDS.filter((f) => f !== "extra");

/**
 * A check's verdict once its algorithm has filled \`o\`: a cost its limit can never admit denies (no
 * wait to tell), and a shadow limit that would deny lets it pass (o.consumes: whether committing
 * writes the counter). Inlined where MAIN evaluates a check: a Lua call costs more than that.
 */
const JUDGE = `local maxCost = c.maxCost
    if maxCost and cost > maxCost then
      o.allowed, o.reason, o.retry, o.delay, o.remaining = false, 'cost_exceeds_limit', 0, 0, o.idle
    end
    o.consumes, o.shadow = o.allowed, 0
    if not o.allowed and c.shadow then
      o.allowed, o.reason, o.retry, o.delay, o.shadow = true, 'ok', 0, 0, ${SHADOW.denied}
    end`;

const MAIN = `-- Tables every decision reuses, so that a call of many decisions allocates as little as it can.
local outcomes, undo, activity = {}, {}, {}
local shapes
-- The call's decisions: how many, the next one, the index of its first key, where its answer starts.
local callN, callNext, callKb, callStart
-- The reply, and its length (#reply is a search each time).
local reply, rn
${luaReasonCodes()}

-- A check's answer at the end of the reply, once the decision is committed or not: the accuracy
-- meter's bits (\`others\`: every other check allows), the lease or overage, what remains.
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
local function decide(kb, shape)
  local n, cs = shape.n, shape.limits
  -- Phase 1: evaluate, reading only. Only a weighted global cap records activity.
  if shape.fair then for j = #activity, 1, -1 do activity[j] = nil end end
  local denying = 0
  for i = 1, n do
    local c, o, key = cs[i], outcomes[i], KEYS[kb + i]
    o.exact = nil
    if c.fair then fair_share(key, c, activity, o) else c.evaluate(key, c, o) end
    ${JUDGE}
    if not o.allowed then denying = denying + 1 end
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
      -- the two phases' bookkeeping, which a check alone does not need, and without a call
      -- (0.1–0.2 µs of Redis per decision less than decide(), measured in 128-decision calls).
      local c, o, key = shape.check, outcomes[1], KEYS[callKb + 1]
      o.exact = nil
      c.evaluate(key, c, o)
      ${JUDGE}
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

-- The call's limits and shapes (lib/store/lua/wire.ts), then its decisions one after the other.
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

function decideBody(parts: readonly string[]): string {
  return [PRELUDE_LUA, ...parts.map((p) => ALGORITHM_LUA[p]), algorithmsTable(parts), MAIN].join("\n");
}

/** The DECIDE script for these Lua parts (luaParts): a script's chunk runs whole on every call, so each holds only what its decisions use. */
export function decideLua(parts: readonly string[]): string {
  return ["local KEYS, ARGV = KEYS, ARGV", decideBody(parts), `begin(ARGV[${ARG.now}])`, "return main()"].join("\n");
}

/** DECIDE with every algorithm (documentation and tests; the store sends the smaller scripts). */
export const DECIDE_LUA = decideLua(Object.keys(ALGORITHM_LUA).sort());

/**
 * DECIDE as a Redis Function library, `<name>_decide`: loaded once per node, then an FCALL runs only
 * its function, where a script defines every function again on each call (docs/benchmarks.md). The
 * name carries a hash of the text, so differing Sluice versions never replace each other's library.
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
