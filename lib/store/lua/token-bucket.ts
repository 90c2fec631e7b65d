/**
 * The Lua twin of lib/policy/algorithms/token-bucket.ts (leaky_bucket runs it too, as the pure
 * leaky-bucket.ts does). Redis: a HASH `<key>` with `l` (the level, in units × window ms) and `t`
 * (its time).
 */
export const TOKEN_BUCKET_LUA = `local function token_bucket(key, c)
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
    return deny('rate_limited', idle, now + ceil(level / L), wait - maxDelay)
  end
  return pass(tokens(needed), idle, now + ceil(needed / L), wait), function()
    redis.call('HSET', key, 'l', fmt(needed), 't', fmt(now))
    pexpire(key, ceil(needed / L))
    if not wantUndo then return NO_UNDO end
    return {{'HINCRBY', key, 'l', -cost * W}}
  end
end
`;
