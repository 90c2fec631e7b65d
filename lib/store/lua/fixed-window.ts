/** The Lua twin of lib/policy/algorithms/fixed-window.ts. Redis: a STRING `<key>:<windowStartMs>`. */
export const FIXED_WINDOW_LUA = `local function fixed_window(key, c, o)
  local ws = floor(now / c.window) * c.window
  local reset = ws + c.window
  local k = key .. ':' .. fmt(ws)
  local count = tonumber(redis.call('GET', k) or '0')
  local idle = max(0, c.limit - count)
  if count + cost > c.limit then
    return deny(o, 'rate_limited', idle, reset, reset - now)
  end
  o.k, o.fresh = k, count == 0
  return pass(o, c.limit - count - cost, idle, reset)
end
local fixed_window_commit = string_counter_commit
`;
