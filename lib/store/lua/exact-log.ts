/**
 * The accuracy meter's exact log beside a sampled counter, with sliding_window_log's verdict. Redis:
 * a ZSET `<key>:x`, one member per admitted request scored by its time, named `<units logged before
 * it, 16 digits>:<its cost>`: the units in the window are two O(log n) reads, and a request is one
 * ZADD however many units it takes (docs/security.md). Members of one ms sort as they came.
 */
export const EXACT_LOG_LUA = `-- Whether the exact log would admit this request, and the running total it continues from.
local function exact_log(key, c)
  local used, total = 0, 0
  local newest = redis.call('ZRANGE', key, -1, -1)[1]
  if newest then
    local first = redis.call('ZRANGEBYSCORE', key, '(' .. fmt(now - c.window), '+inf', 'LIMIT', 0, 1)[1]
    if first then
      local before, units = string.match(newest, '^(%d+):(%d+)$')
      total = tonumber(before) + tonumber(units)
      used = total - tonumber(string.match(first, '^(%d+):'))
    end
  end
  return used + cost <= c.limit, total
end
-- Records the request (\`total\`: what exact_log found; 0 when the window was empty: older ones go).
local function exact_log_commit(key, c, total)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(now - c.window))
  redis.call('ZADD', key, fmt(now), string.format('%016.0f', total) .. ':' .. fmt(cost))
  pexpire(key, c.window)
end
`;
