/**
 * The top of DECIDE (./decide.ts): the clock and the call's memos, the parsed limit strings and the
 * two outcome constructors. An evaluator `<algorithm>(key, c, o)` fills `o`, an outcome table the
 * caller reuses, with the pure twin's LimitOutcome and idleRemaining (lib/policy/algorithms/types.ts)
 * by these names: allowed, reason, remaining, idle, resetAt, retry, delay, overage (-1: none).
 * An evaluator that allows also leaves on `o` what its commit needs, and `<algorithm>_commit(key,
 * c, o)` writes the counter and returns the commands that take the write back (the Cluster refund).
 * No closure and no table is made per check: in Lua each is an allocation.
 */
import { luaLimitFields } from "./wire";

export const PRELUDE_LUA = `local floor, ceil, max, min
-- What each call starts afresh (begin()): its clock, and memos of integer → string (its decisions
-- share the clock, so they format the same window starts), parsed limit strings and quota periods.
local now, ttlPad
local fmtCache
local specs, quotaPeriods
-- Each algorithm's {evaluator, commit} by name (filled in after the algorithm twins, read by spec).
local algorithms
local function fmt(n)
  local s = fmtCache[n]
  if s == nil then
    s = string.format('%.0f', n)
    fmtCache[n] = s
  end
  return s
end
-- Starts a call: \`nowArg\` is a test's clock, or '' for Redis server TIME. Under a test clock keys
-- live a minute longer, as real time runs between its steps; no algorithm reads an expiry.
local function begin(nowArg)
  -- Bound here, not where declared: a Redis Function library may not read \`math\` while it loads.
  if floor == nil then floor, ceil, max, min = math.floor, math.ceil, math.max, math.min end
  fmtCache, specs, quotaPeriods = {}, {}, {}
  if nowArg ~= '' then
    now = tonumber(nowArg)
    ttlPad = 60000
  else
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
    ttlPad = 0
  end
end
local function pexpire(key, ms) redis.call('PEXPIRE', key, ms + ttlPad) end
-- For a key whose expiry is a fixed instant (a window's end): only the write that creates it sets
-- it, except under a test clock, whose expiries are relative to real time.
local function pexpireNew(key, ms, new) if new or ttlPad > 0 then pexpire(key, ms) end end
-- The decision being evaluated (set by the loop at the end, read by every algorithm).
local cost, dry, wantUndo
-- A limit string (LIMIT_FIELDS in ./wire.ts), parsed once per call and shared by every check of the
-- limit in it: only numbers derived from its own fields are cached on it.
local function spec(s)
  local c = specs[s]
  if c then return c end
  local f, n = {}, 0
  for part in string.gmatch(s, '([^|]*)|') do
    n = n + 1
    f[n] = part
  end
  c = {
    ${luaLimitFields()},
    -- whether its outcomes carry \`extra\` (hasExtraField in ./wire.ts)
    extra = false,
    -- numbers an algorithm caches on first use (sliding_window_counter; quota_slot)
    k = false, sub = false, i = false, fi = false, fprev = false, e = false, Lsub = false,
    wEnd = false, wLabel = false, wLimit = false, wCarry = false,
    -- worked out once for every check of this limit (maxCost false: no ceiling, a billed quota)
    fair = false, shadow = false, sampled = false, maxCost = false,
    evaluate = false, commit = false,
  }
  c.extra = c.alg == 'concurrency' or (c.alg == 'quota' and c.overage == 'bill')
  c.fair, c.shadow, c.sampled, c.maxCost = c.member ~= '', c.mode == 'shadow', c.exact == '1', c.limit
  if c.alg == 'token_bucket' or c.alg == 'leaky_bucket' then c.maxCost = tonumber(c.burst) end
  if c.alg == 'quota' and c.overage == 'bill' then c.maxCost = false end
  local a = algorithms[c.alg]
  if a then c.evaluate, c.commit = a[1], a[2] end
  specs[s] = c
  return c
end

-- What a commit returns when the decision did not ask for undo commands (no table per commit).
local NO_UNDO = {}
-- The commit of a STRING counter at o.k (fixed windows, quotas); its creating write sets its expiry.
local function string_counter_commit(key, c, o)
  redis.call('INCRBY', o.k, cost)
  pexpireNew(o.k, o.resetAt - now, o.fresh)
  if not wantUndo then return NO_UNDO end
  return {{'DECRBY', o.k, cost}}
end
-- A check that denies: nothing would be consumed, so remaining is the idle count.
local function deny(o, reason, idle, resetAt, retry)
  o.allowed, o.reason, o.remaining, o.idle, o.resetAt, o.retry, o.delay, o.overage, o.consumes, o.shadow = false, reason, idle, idle, resetAt, retry, 0, -1, false, 0
  return o
end
-- A check that allows (delay and overage are optional: 0 and -1).
local function pass(o, remaining, idle, resetAt, delay, overage)
  o.allowed, o.reason, o.remaining, o.idle, o.resetAt, o.retry, o.delay, o.overage, o.consumes, o.shadow = true, 'ok', remaining, idle, resetAt, 0, delay or 0, overage or -1, true, 0
  return o
end
`;
