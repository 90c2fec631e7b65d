/**
 * The accuracy meter's exact sliding-window log (lib/decision/accuracy.ts), kept beside a sampled
 * subject's approximate counter. Its verdict is sliding_window_log's (lib/policy/algorithms/
 * sliding-window-log.ts: the cost in `(now − window, now]` plus c ≤ limit); the memory store runs
 * that pure function on the same key, and the accuracy parity test replays both.
 *
 * Redis: a ZSET `<key>:x` with one member per admitted unit, scored by its time, so the cost in the
 * window is one ZCOUNT (O(log n)) instead of summing every entry: a sampled subject of a limit of
 * 10,000 pays a few µs, not a scan. Members `<now>:<n>` are unique: within one millisecond the
 * count only grows (nothing leaves a window whose start does not move). Trimmed and PEXPIREd to
 * the window on every write.
 */
export const EXACT_LOG_LUA = `-- Whether the exact log would admit this request, and the units in its window.
local function exact_log(key, c)
  local used = redis.call('ZCOUNT', key, '(' .. fmt(now - c.window), '+inf')
  return used + cost <= c.limit, used
end
-- Records the request in the exact log (\`used\`: what exact_log found in the window).
local function exact_log_commit(key, c, used)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(now - c.window))
  local at = fmt(now)
  for j = 1, cost do redis.call('ZADD', key, at, at .. ':' .. fmt(used + j)) end
  pexpire(key, c.window)
end
`;
