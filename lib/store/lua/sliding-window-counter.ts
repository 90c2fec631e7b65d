/** The Lua twin of lib/policy/algorithms/sliding-window-counter.ts. Redis: a HASH `<key>` of sub-window index → count. */
export const SLIDING_WINDOW_COUNTER_LUA = `-- counts of sub-windows j (absent: 0), the newest k of them up to m, and the fit test
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
local function sliding_window_counter(key, c, o)
  local k = c.k
  if not k then
    k = max(1, tonumber(c.precision))
    c.k, c.sub = k, max(1, floor(c.window / k))
  end
  local sub = c.sub
  if k == 1 then
    -- Precision 1: previous × (1 − elapsed/window) + current, on the general body's scaled integers
    -- with the two counts in locals (no tables: the hot path of most policies); a denial goes on to
    -- the general body for the wait. The call's sub-window, field names and scaled limit live on c.
    local i = c.i
    if not i then
      i = floor(now / sub)
      c.i, c.fi, c.fprev, c.e, c.Lsub = i, fmt(i), fmt(i - 1), now - i * sub, c.limit * sub
    end
    local fi, e, Lsub = c.fi, c.e, c.Lsub
    local v = redis.call('HMGET', key, c.fprev, fi)
    local p, q = tonumber(v[1]) or 0, tonumber(v[2]) or 0
    local idle = max(0, ceil((Lsub - p * (sub - e)) / sub) - q)
    if p * (sub - e) + (q + cost - 1) * sub < Lsub then
      -- stale: nil, the commit that opens sub-window i drops i - 2 by name (the only field that
      -- can have slid out, see below), whether it is there or not: cheaper than reading it first
      o.field, o.fresh, o.i, o.stale = fi, q == 0, i, nil
      return pass(o, max(0, idle - cost), idle, (i + 2) * sub)
    end
  end
  local i = floor(now / sub)
  local L = c.limit
  -- With Redis time, a live key (expiring at (w + k + 1) * sub) was last written in a sub-window
  -- w >= i - k, whose first write dropped every field < w - k: only i - 2k .. i - k - 1 can have slid
  -- out, so they are read here and dropped by name on commit, not by HKEYS (which test clocks need).
  local lo = i - k
  if ttlPad == 0 then lo = i - 2 * k end
  local fields = {}
  for j = lo, i do fields[j - lo + 1] = fmt(j) end
  local vals = redis.call('HMGET', key, unpack(fields))
  local cnt, stale = {}, false
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
    -- stale: the fields to drop (a table), or false: none
    o.field, o.fresh, o.i, o.stale = fmt(i), (cnt[i] or 0) == 0, i, stale
    return pass(o, swc_remaining(cnt, k, sub, L, i, cost), idle, (i + k + 1) * sub)
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
  return deny(o, 'rate_limited', idle, reset_from, retry)
end
local function sliding_window_counter_commit(key, c, o)
  redis.call('HINCRBY', key, o.field, cost)
  if o.fresh then
    -- a new sub-window: drop the ones that slid out (once per sub-window, not per request)
    if ttlPad == 0 then
      local stale = o.stale
      if stale == nil then redis.call('HDEL', key, fmt(o.i - 2))
      elseif stale then redis.call('HDEL', key, unpack(stale)) end
    else
      local names = redis.call('HKEYS', key)
      for _, f in ipairs(names) do if tonumber(f) < o.i - c.k then redis.call('HDEL', key, f) end end
    end
  end
  -- the expiry, (i + k + 1) * sub, is the same for every write in sub-window i
  pexpireNew(key, (o.i + c.k + 1) * c.sub - now, o.fresh)
  if not wantUndo then return NO_UNDO end
  return {{'HINCRBY', key, o.field, -cost}}
end
`;
