/** The Lua twin of lib/policy/algorithms/token-bucket.ts (leaky_bucket runs it too). Redis: a HASH `<key>`, `l` the level (units × window ms), `t` its time. */
export const TOKEN_BUCKET_LUA = `local function token_bucket(key, c, o)
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
  local idle = max(0, floor((capacity - level) / W))
  if wait > maxDelay then
    return deny(o, 'rate_limited', idle, now + ceil(level / L), wait - maxDelay)
  end
  o.needed = needed
  return pass(o, max(0, floor((capacity - needed) / W)), idle, now + ceil(needed / L), wait)
end
local function token_bucket_commit(key, c, o)
  redis.call('HSET', key, 'l', fmt(o.needed), 't', fmt(now))
  pexpire(key, ceil(o.needed / c.limit))
  if not wantUndo then return NO_UNDO end
  return {{'HINCRBY', key, 'l', -cost * c.window}}
end
`;
