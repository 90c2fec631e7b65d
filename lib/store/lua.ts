/**
 * The Redis twins of lib/policy/algorithms, as one Lua script per decision (Lua 5.1, Redis ≥ 7.0,
 * no `#!lua` shebang: Redis 7.0 rejects flags there). Each function below mirrors the pure file of
 * the same name line for line; lib/policy/algorithms/*.int.test.ts replay scenarios through both.
 *
 * DECIDE — decides one or more requests, each all-or-nothing, atomically, in one call. KEYS: the
 * base counter key of every check of every decision, in order. ARGV: [1] now override in ms (empty
 * in production: the clock is `redis.call('TIME')`; only tests pass it, to replay a scenario), [2]
 * the number of decisions, then per decision: cost, flags (0 commit, 1 dry run, 2 commit and return
 * undo commands, 3 dry run), the number of its checks, and one limit string per check (13 fields
 * joined by `|`, see checkSpec in redis.ts). The Redis store sends the decisions that arrive in one event-loop turn as one call
 * (lib/store/redis.ts). Keys with suffixes (window start, period label) are derived from the base
 * key and keep its hash tag, so they are in its slot.
 * The script text holds only the algorithms the decisions use (decideLua below): Lua defines every
 * function of the chunk on every call, so fewer functions is less work per call.
 * For each decision, phase 1 evaluates every check reading only; phase 2, if every check allows and
 * it is not a dry run, commits them all, and every key written gets its PEXPIRE in the same call.
 * Returns one flat array: nowMs, then per decision: allowed, the number of undo words W, 10 fields
 * per check, then W words: the commands that take the commit back (only when the flags ask for
 * them), used only for the cross-slot refund on Redis Cluster. A decision whose evaluation raised an
 * error answers just `-1, message` instead, and the next decisions still run.
 */
const PRELUDE = `local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min
-- Integer → string for field names and arguments, remembered for the call: the decisions of one
-- call share the clock, so they format the same window starts again and again.
local fmtCache = {}
local function fmt(n)
  local s = fmtCache[n]
  if s == nil then
    s = string.format('%.0f', n)
    fmtCache[n] = s
  end
  return s
end
local now
-- Tests replaying a scenario pass their clock; real time still runs between their steps, so keys
-- then live a minute longer than their windows. Expiry is only garbage collection: no algorithm
-- reads it, each one checks its window itself, so the answers are the same.
local ttlPad = 0
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
  ttlPad = 60000
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end
local function pexpire(key, ms) redis.call('PEXPIRE', key, ms + ttlPad) end
-- For a key whose expiry is a fixed instant (a window's end): only the write that creates it needs
-- to set it; later writes in the same window would set the same instant again. With a test clock
-- the expiry is relative to real time, so it is set on every write there.
local function pexpireNew(key, ms, new) if new or ttlPad > 0 then pexpire(key, ms) end end
-- The decision being evaluated (set by the loop at the end, read by every algorithm).
local cost, dry, wantUndo
-- A check's limit as one ARGV string, 'alg|limit|window|burst|precision|mode|maxDelay|leaseTtl|
-- period|overage|weight|member|token|' (checkSpec in redis.ts), parsed once per call: the
-- decisions of one call mostly share their limits. The parsed table is shared, never written to.
local specs = {}
local function spec(s)
  local c = specs[s]
  if c then return c end
  local f, n = {}, 0
  for part in string.gmatch(s, '([^|]*)|') do
    n = n + 1
    f[n] = part
  end
  c = {
    alg = f[1], limit = tonumber(f[2]), window = tonumber(f[3]),
    -- the rest stay strings until an algorithm needs them (tonumber is not free)
    burst = f[4], precision = f[5], mode = f[6], maxDelay = f[7], leaseTtl = f[8], period = f[9],
    overage = f[10], weight = f[11], member = f[12], token = f[13],
  }
  specs[s] = c
  return c
end

-- Each evaluator returns an outcome {allowed, reason, remaining, idle, resetAt, retry, delay, overage}
-- and, when it allows, a commit function returning undo commands.
`;

/** Each algorithm's Lua twin, by the name DECIDE dispatches on (leaky_bucket runs token_bucket). */
const ALGORITHM_LUA: Record<string, string> = {
  fixed_window: `local function fixed_window(key, c)
  local ws = floor(now / c.window) * c.window
  local reset = ws + c.window
  local k = key .. ':' .. fmt(ws)
  local count = tonumber(redis.call('GET', k) or '0')
  local idle = max(0, c.limit - count)
  if count + cost > c.limit then
    return {false, 'rate_limited', idle, idle, reset, reset - now, 0, -1}
  end
  return {true, 'ok', c.limit - count - cost, idle, reset, 0, 0, -1}, function()
    redis.call('INCRBY', k, cost)
    pexpireNew(k, reset - now, count == 0)
    return {{'DECRBY', k, cost}}
  end
end
`,
  sliding_window_log: `local function sliding_window_log(key, c)
  local live = redis.call('ZRANGEBYSCORE', key, '(' .. fmt(now - c.window), '+inf', 'WITHSCORES')
  local n = #live / 2
  local used = 0
  for j = 1, n do used = used + tonumber(string.match(live[2 * j - 1], ':(%d+)$')) end
  local idle = max(0, c.limit - used)
  if used + cost > c.limit then
    local still, retryAt = used, now
    for j = 1, n do
      if still + cost <= c.limit then break end
      still = still - tonumber(string.match(live[2 * j - 1], ':(%d+)$'))
      retryAt = tonumber(live[2 * j]) + c.window
    end
    local reset = now
    if n > 0 then reset = tonumber(live[2 * n]) + c.window end
    return {false, 'rate_limited', idle, idle, reset, retryAt - now, 0, -1}
  end
  return {true, 'ok', c.limit - used - cost, idle, now + c.window, 0, 0, -1}, function()
    local member = fmt(now) .. ':' .. fmt(n) .. ':' .. fmt(cost)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(now - c.window))
    redis.call('ZADD', key, fmt(now), member)
    pexpire(key, c.window)
    return {{'ZREM', key, member}}
  end
end
`,
  sliding_window_counter: `-- counts of sub-windows j (absent: 0), the newest k of them up to m, and the fit test
local function swc_newest(cnt, k, m)
  local newest = 0
  for j = m - k + 1, m do newest = newest + (cnt[j] or 0) end
  return newest
end
local function swc_fits(cnt, k, sub, L, m, e)
  return (cnt[m - k] or 0) * (sub - e) + (swc_newest(cnt, k, m) + cost - 1) * sub < L * sub
end
local function swc_remaining(cnt, k, sub, L, i, extra)
  return max(0, ceil((L * sub - (cnt[i - k] or 0) * (sub - (now - i * sub))) / sub) - swc_newest(cnt, k, i) - extra)
end
local function sliding_window_counter(key, c)
  local k = max(1, tonumber(c.precision))
  local sub = max(1, floor(c.window / k))
  local i = floor(now / sub)
  local L = c.limit
  -- With Redis time, a live key's last write was in a sub-window w >= i - k (its expiry is
  -- (w + k + 1) * sub), and that sub-window's first write dropped every field < w - k: the only
  -- fields that can have slid out are i - 2k .. i - k - 1, so they are read here too and dropped
  -- by name below, instead of listing the whole hash (HKEYS), which test clocks still need.
  local lo = i - k
  if ttlPad == 0 then lo = i - 2 * k end
  local fields = {}
  for j = lo, i do fields[j - lo + 1] = fmt(j) end
  local vals = redis.call('HMGET', key, unpack(fields))
  local cnt, stale = {}, nil
  for j = 1, #fields do
    if lo + j - 1 < i - k then
      if vals[j] then
        stale = stale or {}
        stale[#stale + 1] = fields[j]
      end
    elseif vals[j] then
      cnt[lo + j - 1] = tonumber(vals[j])
    end
  end
  local reset_from = now
  for j = i, i - k, -1 do if (cnt[j] or 0) > 0 then reset_from = (j + k + 1) * sub break end end
  local idle = swc_remaining(cnt, k, sub, L, i, 0)
  if swc_fits(cnt, k, sub, L, i, now - i * sub) then
    local fresh = (cnt[i] or 0) == 0
    return {true, 'ok', swc_remaining(cnt, k, sub, L, i, cost), idle, (i + k + 1) * sub, 0, 0, -1}, function()
      local field = fmt(i)
      redis.call('HINCRBY', key, field, cost)
      if fresh then
        -- a new sub-window: drop the ones that slid out (once per sub-window, not per request)
        if ttlPad == 0 then
          if stale then redis.call('HDEL', key, unpack(stale)) end
        else
          local names = redis.call('HKEYS', key)
          for _, f in ipairs(names) do if tonumber(f) < i - k then redis.call('HDEL', key, f) end end
        end
      end
      -- the expiry, (i + k + 1) * sub, is the same for every write in sub-window i
      pexpireNew(key, (i + k + 1) * sub - now, fresh)
      return {{'HINCRBY', key, field, -cost}}
    end
  end
  local retry = (i + k + 1) * sub - now
  for m = i, i + k + 1 do
    local room = L + 1 - cost - swc_newest(cnt, k, m)
    if room > 0 then
      local oldest = cnt[m - k] or 0
      local startE = 0
      if m == i then startE = now - i * sub end
      local e = 0
      if oldest * sub - room * sub >= 0 then e = floor(((oldest - room) * sub) / oldest) + 1 end
      e = max(e, startE)
      if e < sub and swc_fits(cnt, k, sub, L, m, e) then retry = m * sub + e - now break end
    end
  end
  return {false, 'rate_limited', idle, idle, reset_from, retry, 0, -1}
end
`,
  token_bucket: `local function token_bucket(key, c)
  local W, L = c.window, c.limit
  local capacity = tonumber(c.burst) * W
  local vals = redis.call('HMGET', key, 'l', 't')
  local level = 0
  if vals[1] then level = max(0, tonumber(vals[1]) - max(0, now - tonumber(vals[2])) * L) end
  local needed = level + cost * W
  local wait = 0
  if needed > capacity then wait = ceil((needed - capacity) / L) end
  local maxDelay = 0
  if c.mode == 'delay' then maxDelay = tonumber(c.maxDelay) end
  local function tokens(owed) return max(0, floor((capacity - owed) / W)) end
  local idle = tokens(level)
  if wait > maxDelay then
    return {false, 'rate_limited', idle, idle, now + ceil(level / L), wait - maxDelay, 0, -1}
  end
  return {true, 'ok', tokens(needed), idle, now + ceil(needed / L), 0, wait, -1}, function()
    redis.call('HSET', key, 'l', fmt(needed), 't', fmt(now))
    pexpire(key, ceil(needed / L))
    return {{'HINCRBY', key, 'l', -cost * W}}
  end
end
`,
  concurrency: `local function concurrency(key, c)
  local used = redis.call('ZCOUNT', key, '(' .. fmt(now), '+inf')
  local lastExp = now
  local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if top[2] and tonumber(top[2]) > now then lastExp = tonumber(top[2]) end
  local idle = max(0, c.limit - used)
  if used + cost > c.limit then
    local nth = redis.call('ZRANGEBYSCORE', key, '(' .. fmt(now), '+inf', 'WITHSCORES', 'LIMIT', used + cost - c.limit - 1, 1)
    local freeAt = lastExp
    if nth[2] then freeAt = tonumber(nth[2]) end
    return {false, 'concurrency_limited', idle, idle, lastExp, freeAt - now, 0, -1}
  end
  local exp = now + tonumber(c.leaseTtl)
  return {true, 'ok', c.limit - used - cost, idle, max(lastExp, exp), 0, 0, -1}, function()
    redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(now))
    local undo = {'ZREM', key}
    for j = 1, cost do
      redis.call('ZADD', key, fmt(exp), c.token .. ':' .. j)
      undo[#undo + 1] = c.token .. ':' .. j
    end
    pexpire(key, max(lastExp, exp) - now)
    return {undo}
  end
end
`,
  quota: `-- lib/policy/quota-period.ts
local function civil_from_days(days)
  local z = days + 719468
  local era = floor(z / 146097)
  local doe = z - era * 146097
  local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
  local mp = floor((5 * doy + 2) / 153)
  local d = doy - floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end

local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = floor(y / 400)
  local yoe = y - era * 400
  local mp = m > 2 and m - 3 or m + 9
  local doy = floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function quota(key, c)
  local DAY = 86400000
  local days = floor(now / DAY)
  local y, m, d = civil_from_days(days)
  local periodEnd, label
  if c.period == 'day' then
    periodEnd = (days + 1) * DAY
    label = string.format('%d-%02d-%02d', y, m, d)
  else
    local ny, nm = y, m + 1
    if m == 12 then ny, nm = y + 1, 1 end
    periodEnd = days_from_civil(ny, nm, 1) * DAY
    label = string.format('%d-%02d', y, m)
  end
  local k = key .. ':' .. label
  local used = tonumber(redis.call('GET', k) or '0')
  local idle = max(0, c.limit - used)
  local function commit()
    redis.call('INCRBY', k, cost)
    pexpireNew(k, periodEnd - now, used == 0)
    return {{'DECRBY', k, cost}}
  end
  if c.overage == 'bill' then
    local overage = max(0, used + cost - c.limit) - max(0, used - c.limit)
    return {true, 'ok', max(0, c.limit - used - cost), idle, periodEnd, 0, 0, overage}, commit
  end
  if used + cost > c.limit then
    return {false, 'quota_exhausted', idle, idle, periodEnd, periodEnd - now, 0, -1}
  end
  return {true, 'ok', c.limit - used - cost, idle, periodEnd, 0, 0, -1}, commit
end
`,
  fair_share: `-- lib/policy/fair-share.ts
local function fair_share(key, c, activity)
  local W, L = c.window, c.limit
  local ws = floor(now / W) * W
  local reset = ws + W
  local wk = key .. ':' .. fmt(ws)
  local ak = key .. ':a'
  local member, weight = c.member, tonumber(c.weight)
  local weights = weight
  local others = {}
  local stale = {}
  local act = redis.call('HGETALL', ak)
  for j = 1, #act, 2 do
    local w, seen = string.match(act[j + 1], '^(%d+):(%d+)$')
    if tonumber(seen) >= ws - W then
      if act[j] ~= member then
        others[#others + 1] = {act[j], tonumber(w)}
        weights = weights + tonumber(w)
      end
    else
      stale[#stale + 1] = act[j]
    end
  end
  local usedAll = redis.call('HGETALL', wk)
  local used, total = {}, 0
  for j = 1, #usedAll, 2 do
    if usedAll[j] == 't' then total = tonumber(usedAll[j + 1])
    else used[string.sub(usedAll[j], 3)] = tonumber(usedAll[j + 1]) end
  end
  local owed = 0
  for _, o in ipairs(others) do owed = owed + max(0, L * o[2] - (used[o[1]] or 0) * weights) end
  local mine = used[member] or 0
  local function available(t, u)
    return max(0, min(L - t, floor(max(L * weight - u * weights, (L - t) * weights - owed) / weights)))
  end
  local idle = available(total, mine)
  activity[#activity + 1] = function()
    for _, f in ipairs(stale) do redis.call('HDEL', ak, f) end
    redis.call('HSET', ak, member, fmt(weight) .. ':' .. fmt(ws))
    pexpire(ak, ws + 2 * W - now)
  end
  local fits = total + cost <= L and ((mine + cost) * weights <= L * weight or (total + cost) * weights + owed <= L * weights)
  if not fits then
    return {false, 'rate_limited', idle, idle, reset, reset - now, 0, -1}
  end
  return {true, 'ok', available(total + cost, mine + cost), idle, reset, 0, 0, -1}, function()
    redis.call('HINCRBY', wk, 't', cost)
    redis.call('HINCRBY', wk, 'u:' .. member, cost)
    pexpire(wk, reset - now)
    return {{'HINCRBY', wk, 't', -cost}, {'HINCRBY', wk, 'u:' .. member, -cost}}
  end
end
`,
};

const MAIN = `-- One decision: checks n at KEYS[kb + 1 ..], their limits at ARGV[ab + 1 ..].
local function decide(kb, ab, n, reply)
  -- Phase 1: evaluate, reading only.
  local results, commits, allAllowed, activity = {}, {}, true, {}
  for i = 1, n do
    local c = spec(ARGV[ab + i])
    local o, commit
    if c.member ~= '' then
      o, commit = fair_share(KEYS[kb + i], c, activity)
    else
      o, commit = algorithms[c.alg](KEYS[kb + i], c)
    end
    local maxCost = c.limit
    if c.alg == 'token_bucket' or c.alg == 'leaky_bucket' then maxCost = tonumber(c.burst) end
    if c.alg == 'quota' and c.overage == 'bill' then maxCost = cost end
    if c.member ~= '' then maxCost = c.limit end
    if cost > maxCost then
      o[1], o[2], o[6], o[7], o[3] = false, 'cost_exceeds_limit', 0, 0, o[4]
    end
    -- o[9]: whether it consumes when committed; o[10]: a shadow limit that would have denied
    o[9], o[10] = o[1], 0
    if not o[1] and c.mode == 'shadow' then
      o[1], o[2], o[6], o[7], o[10] = true, 'ok', 0, 0, 1
    end
    if not o[1] then allAllowed = false end
    results[i] = o
    if o[9] then commits[i] = commit end
  end

  -- Phase 2: commit all or nothing.
  local undo = {}
  local doCommit = allAllowed and not dry
  if not dry then for _, f in ipairs(activity) do f() end end
  -- Flat (nested tables cost Redis a conversion each): allowed, the count of undo words that
  -- follow the outcomes, 10 fields per check, then each undo command as its length and its words.
  local at = #reply
  reply[at + 1], reply[at + 2] = allAllowed and 1 or 0, 0
  for i = 1, n do
    local o = results[i]
    local committed = doCommit and o[9]
    local shadow = o[10]
    local lease = ''
    if committed then
      local u = commits[i]()
      if wantUndo then for _, cmd in ipairs(u) do undo[#undo + 1] = cmd end end
      local c = spec(ARGV[ab + i])
      if c.alg == 'concurrency' then lease = c.token end
    end
    local remaining, overage = o[3], o[8]
    if not committed then remaining, overage = o[4], -1 end
    local m = #reply
    reply[m + 1], reply[m + 2], reply[m + 3], reply[m + 4], reply[m + 5] = o[1] and 1 or 0, o[2], remaining, o[4], o[5]
    reply[m + 6], reply[m + 7], reply[m + 8], reply[m + 9], reply[m + 10] = o[6], o[7], shadow, overage, lease
  end
  local words = 0
  for _, cmd in ipairs(undo) do
    reply[#reply + 1] = #cmd
    for _, word in ipairs(cmd) do reply[#reply + 1] = word end
    words = words + 1 + #cmd
  end
  reply[at + 2] = words
end

-- ARGV[2] decisions, each as: cost, flags, number of checks, then one limit string per check. Every
-- decision is all-or-nothing on its own; the script runs them one after the other, atomically.
local reply = {now}
local a, kb = 3, 0
for _ = 1, tonumber(ARGV[2]) do
  cost = tonumber(ARGV[a])
  -- flags: 0 commit, 1 dry run, 2 commit and return undo commands, 3 dry run and undo (none).
  local flags = ARGV[a + 1]
  dry = flags == '1' or flags == '3'
  wantUndo = flags == '2' or flags == '3'
  local n = tonumber(ARGV[a + 2])
  -- A decision that fails (a key of the wrong type…) answers its own error, not its neighbours'.
  local at = #reply
  local ok, err = pcall(decide, kb, a + 2, n, reply)
  if not ok then
    for j = #reply, at + 1, -1 do reply[j] = nil end
    if type(err) == 'table' then err = err.err or 'ERR script error' end
    reply[at + 1], reply[at + 2] = -1, tostring(err)
  end
  a = a + 3 + n
  kb = kb + n
end
return reply`;

/** The names of the Lua functions a decision with these algorithms needs, sorted (the script's cache key). */
export function luaParts(checks: readonly { algorithm: string; fairShare?: unknown }[]): string[] {
  const names = new Set<string>();
  for (const c of checks) names.add(c.fairShare ? "fair_share" : c.algorithm === "leaky_bucket" ? "token_bucket" : c.algorithm);
  return [...names].filter((n) => n in ALGORITHM_LUA).sort();
}

/** The DECIDE script for a decision whose checks use these Lua parts (see luaParts). */
export function decideLua(parts: readonly string[]): string {
  const table = parts
    .filter((p) => p !== "fair_share")
    .map((p) => `${p} = ${p}`)
    .concat(parts.includes("token_bucket") ? ["leaky_bucket = token_bucket"] : []);
  return [PRELUDE, ...parts.map((p) => ALGORITHM_LUA[p]), `local algorithms = { ${table.join(", ")} }`, MAIN].join("\n");
}

/** DECIDE with every algorithm (documentation and tests; the store sends the smaller scripts). */
export const DECIDE_LUA = decideLua(Object.keys(ALGORITHM_LUA).sort());



/**
 * REFUND — takes back the commit of one script call (Redis Cluster cross-slot path only).
 * KEYS: the keys of the undo commands, all in one slot. ARGV: for each command, its name and then
 * its arguments after the key, as `name, argc, args…`. Only DECRBY / HINCRBY / ZREM are ever sent.
 */
export const REFUND_LUA = `
local a = 1
for i = 1, #KEYS do
  local name, argc = ARGV[a], tonumber(ARGV[a + 1])
  local args = {}
  for j = 1, argc do args[j] = ARGV[a + 1 + j] end
  a = a + 2 + argc
  if name == 'DECRBY' or name == 'HINCRBY' or name == 'ZREM' then
    if redis.call('EXISTS', KEYS[i]) == 1 then redis.call(name, KEYS[i], unpack(args)) end
  end
end
return #KEYS
`;

/**
 * RELEASE — frees a concurrency lease. KEYS[1]: the lease's counter. ARGV: [1] token, [2] cost,
 * [3] now override (tests only). Returns 1 if the lease was live, else 0.
 */
export const RELEASE_LUA = `
local now
if ARGV[3] ~= nil and ARGV[3] ~= '' then
  now = tonumber(ARGV[3])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local score = redis.call('ZSCORE', KEYS[1], ARGV[1] .. ':1')
if not score or tonumber(score) <= now then return 0 end
for j = 1, tonumber(ARGV[2]) do redis.call('ZREM', KEYS[1], ARGV[1] .. ':' .. j) end
return 1
`;
