/**
 * The Lua twin of lib/policy/algorithms/concurrency.ts. Redis: a ZSET `<key>` of lease units
 * `<token>:<j>` scored by their expiry, and per lease the record of its units (LEASE_RECORD_SUFFIX).
 */
import { LEASE_RECORD_SUFFIX } from "../lease-id";

export const CONCURRENCY_LUA = `local function concurrency(key, c, o)
  local used = redis.call('ZCOUNT', key, '(' .. fmt(now), '+inf')
  local lastExp = now
  local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if top[2] and tonumber(top[2]) > now then lastExp = tonumber(top[2]) end
  local idle = max(0, c.limit - used)
  if used + cost > c.limit then
    local nth = redis.call('ZRANGEBYSCORE', key, '(' .. fmt(now), '+inf', 'WITHSCORES', 'LIMIT', used + cost - c.limit - 1, 1)
    local freeAt = lastExp
    if nth[2] then freeAt = tonumber(nth[2]) end
    return deny(o, 'concurrency_limited', idle, lastExp, freeAt - now)
  end
  o.exp = now + tonumber(c.leaseTtl)
  return pass(o, c.limit - used - cost, idle, max(lastExp, o.exp))
end
local function concurrency_commit(key, c, o)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(now))
  local undo = {'ZREM', key}
  for j = 1, cost do
    redis.call('ZADD', key, fmt(o.exp), c.token .. ':' .. j)
    undo[#undo + 1] = c.token .. ':' .. j
  end
  pexpire(key, o.resetAt - now)
  redis.call('SET', key .. '${LEASE_RECORD_SUFFIX}' .. c.token, fmt(cost), 'PX', fmt(o.exp - now + ttlPad))
  return {undo}
end
`;
