/**
 * The accuracy meter's exact sliding-window log (lib/decision/accuracy.ts), kept beside a sampled
 * subject's approximate counter. Its verdict is sliding_window_log's (lib/policy/algorithms/
 * sliding-window-log.ts: the cost in `(now − window, now]` plus c ≤ limit); the memory store runs
 * that pure function on the same key, and the accuracy parity test replays both.
 *
 * Redis: a ZSET `<key>:x` with one member per admitted request, scored by its time, named
 * `<units logged before it, 16 digits>:<its cost>`: the units in the window are the newest entry's
 * running total less the running total before the oldest entry in the window — two O(log n) reads,
 * whatever the costs, and one ZADD per request, however many units it takes (one member per unit
 * would let a request of cost 1,000,000 loop a million ZADDs inside Redis: issue #30). The running
 * total starts again at 0 whenever the window is empty; entries of one millisecond sort as they
 * came (their totals grow). Trimmed and PEXPIREd to the window on every write.
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
-- Records the request in the exact log (\`total\`: what exact_log found; 0 when its window was empty,
-- and then every entry left is older than the window and goes).
local function exact_log_commit(key, c, total)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(now - c.window))
  redis.call('ZADD', key, fmt(now), string.format('%016.0f', total) .. ':' .. fmt(cost))
  pexpire(key, c.window)
end
`;
