/**
 * The Lua twin of lib/policy/fair-share.ts (a weighted global cap). Redis: a HASH
 * `<key>:<windowStartMs>` with `t` (total) and `u:<member>` (per tenant), and a HASH `<key>:a` of
 * the active members (`<weight>:<windowStartMs last seen>`). Activity is recorded for every
 * decision that is not a dry run, allowed or not: it is how the others' share is known.
 */
export const FAIR_SHARE_LUA = `local function fair_share(key, c, activity)
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
    return deny('rate_limited', idle, reset, reset - now)
  end
  return pass(available(total + cost, mine + cost), idle, reset), function()
    redis.call('HINCRBY', wk, 't', cost)
    redis.call('HINCRBY', wk, 'u:' .. member, cost)
    pexpire(wk, reset - now)
    if not wantUndo then return NO_UNDO end
    return {{'HINCRBY', wk, 't', -cost}, {'HINCRBY', wk, 'u:' .. member, -cost}}
  end
end
`;
