/** The Lua twin of lib/policy/algorithms/fixed-window.ts. Redis: a STRING `<key>:<windowStartMs>`. */
export const FIXED_WINDOW_LUA = `local function fixed_window(key, c)
  local ws = floor(now / c.window) * c.window
  local reset = ws + c.window
  local k = key .. ':' .. fmt(ws)
  local count = tonumber(redis.call('GET', k) or '0')
  local idle = max(0, c.limit - count)
  if count + cost > c.limit then
    return deny('rate_limited', idle, reset, reset - now)
  end
  return pass(c.limit - count - cost, idle, reset), function()
    redis.call('INCRBY', k, cost)
    pexpireNew(k, reset - now, count == 0)
    if not wantUndo then return NO_UNDO end
    return {{'DECRBY', k, cost}}
  end
end
`;
