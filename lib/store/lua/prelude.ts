/**
 * The top of DECIDE (lib/store/lua/decide.ts): the clock and the call's memos (begin), integer
 * formatting, the parsed limit strings and the two outcome constructors every algorithm twin returns.
 *
 * An evaluator `<algorithm>(key, c, o)` fills `o`, an outcome table the caller owns and reuses from
 * decision to decision, with named fields (never positional slots):
 *   allowed   whether this check lets the request through
 *   reason    'ok', or why it denies ('rate_limited', 'quota_exhausted', 'concurrency_limited')
 *   remaining units left once this request is committed (what the answer shows when it consumes)
 *   idle      units left if this request consumes nothing (what the answer shows otherwise)
 *   resetAt   absolute ms (store clock) when the counter is back to full / the window resets
 *   retry     ms after which the same request passes if nothing else consumes (0 when allowed)
 *   delay     shaping wait of delay-mode limits (ms; 0 otherwise)
 *   overage   units billed beyond an `overage: bill` quota by this request (-1: not such a quota)
 * An evaluator that allows also leaves on `o` what its commit needs (the window it read, whether
 * the key is new…), and `<algorithm>_commit(key, c, o)` writes the counter and returns the
 * commands that would take the write back (the Cluster cross-slot refund). No closure and no table
 * is made per check: in Lua each is an allocation, and a call decides many checks.
 */
import { luaLimitFields } from "./wire";

export const PRELUDE_LUA = `local floor, ceil, max, min
-- The call being run: its clock, and memos that live for one call (reset by begin()). As a Redis
-- Function the library is loaded once and every function defined once; these are the only things
-- each call starts afresh.
local now, ttlPad
-- Integer → string for field names and arguments, remembered for the call: the decisions of one
-- call share the clock, so they format the same window starts again and again.
local fmtCache
-- Parsed limit strings (spec below) and quota periods (quota_period), for the call.
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
-- Starts a call: \`nowArg\` is ARGV[1], a test's clock, or '' for Redis server TIME. Tests replaying
-- a scenario pass their clock; real time still runs between their steps, so keys then live a minute
-- longer than their windows. Expiry is only garbage collection: no algorithm reads it, each one
-- checks its window itself, so the answers are the same.
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
-- For a key whose expiry is a fixed instant (a window's end): only the write that creates it needs
-- to set it; later writes in the same window would set the same instant again. With a test clock
-- the expiry is relative to real time, so it is set on every write there.
local function pexpireNew(key, ms, new) if new or ttlPad > 0 then pexpire(key, ms) end end
-- The decision being evaluated (set by the loop at the end, read by every algorithm).
local cost, dry, wantUndo
-- A check's limit as one ARGV string (LIMIT_FIELDS in lib/store/lua/wire.ts), parsed once per
-- call: the decisions of one call mostly share their limits. The parsed table is shared by every
-- check of the limit in the call; only numbers derived from its own fields are cached on it.
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
    -- whether its outcomes carry the extra reply field (hasExtraField in lib/store/lua/wire.ts)
    extra = false,
    -- derived numbers an algorithm caches here on first use (sliding_window_counter: k, sub, and
    -- for the call's clock the sub-window i, its field names fi and fprev, e and Lsub)
    k = false, sub = false, i = false, fi = false, fprev = false, e = false, Lsub = false,
    -- a quota's window slot at the call's clock (quota_slot): end, label, limit, carry
    wEnd = false, wLabel = false, wLimit = false, wCarry = false,
    -- what DECIDE asks of every check of this limit, worked out once: a weighted global cap's fair
    -- share, a shadow limit, a subject the accuracy meter samples, the most one request may cost
    -- (false: no ceiling, a billed quota), and the algorithm's evaluator and commit
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
-- The commit of a counter kept as a STRING at o.k (fixed windows, quotas): adds the cost, and the
-- write that creates it (o.fresh) sets its expiry, o.resetAt.
local function string_counter_commit(key, c, o)
  redis.call('INCRBY', o.k, cost)
  pexpireNew(o.k, o.resetAt - now, o.fresh)
  if not wantUndo then return NO_UNDO end
  return {{'DECRBY', o.k, cost}}
end
-- A check that denies: nothing would be consumed, so remaining is the idle count. Fills \`o\`, the
-- caller's outcome table (reused from decision to decision: no table per check), and returns it.
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
