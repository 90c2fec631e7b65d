/**
 * The Lua twin of lib/policy/fair-share.ts (a weighted global cap). Redis: a HASH `<key>:<windowStartMs>`
 * (`t` the total, `u:<member>` per tenant) and a HASH `<key>:a` of active members (`<weight>:<ws seen>`).
 */
export const FAIR_SHARE_LUA = `local function fair_share(key, c, activity, o)
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
  for _, other in ipairs(others) do owed = owed + max(0, L * other[2] - (used[other[1]] or 0) * weights) end
  local mine = used[member] or 0
  local function available(t, u)
    return max(0, min(L - t, floor(max(L * weight - u * weights, (L - t) * weights - owed) / weights)))
  end
  local idle = available(total, mine)
  -- Recorded for every decision that is not a dry run, allowed or not: how the others' share is known.
  activity[#activity + 1] = function()
    for _, f in ipairs(stale) do redis.call('HDEL', ak, f) end
    redis.call('HSET', ak, member, fmt(weight) .. ':' .. fmt(ws))
    pexpire(ak, ws + 2 * W - now)
  end
  local fits = total + cost <= L and ((mine + cost) * weights <= L * weight or (total + cost) * weights + owed <= L * weights)
  if not fits then
    return deny(o, 'rate_limited', idle, reset, reset - now)
  end
  o.wk = wk
  return pass(o, available(total + cost, mine + cost), idle, reset)
end
local function fair_share_commit(key, c, o)
  redis.call('HINCRBY', o.wk, 't', cost)
  redis.call('HINCRBY', o.wk, 'u:' .. c.member, cost)
  pexpire(o.wk, o.resetAt - now)
  if not wantUndo then return NO_UNDO end
  return {{'HINCRBY', o.wk, 't', -cost}, {'HINCRBY', o.wk, 'u:' .. c.member, -cost}}
end
`;
