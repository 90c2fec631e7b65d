/** The Lua twin of lib/policy/algorithms/sliding-window-log.ts. Redis: a ZSET `<key>` of `<atMs>:<n>:<cost>` members scored by their time. */
export const SLIDING_WINDOW_LOG_LUA = `local function sliding_window_log(key, c, o)
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
    return deny(o, 'rate_limited', idle, reset, retryAt - now)
  end
  o.n = n
  return pass(o, c.limit - used - cost, idle, now + c.window)
end
local function sliding_window_log_commit(key, c, o)
  local member = fmt(now) .. ':' .. fmt(o.n) .. ':' .. fmt(cost)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(now - c.window))
  redis.call('ZADD', key, fmt(now), member)
  pexpire(key, c.window)
  if not wantUndo then return NO_UNDO end
  return {{'ZREM', key, member}}
end
`;
