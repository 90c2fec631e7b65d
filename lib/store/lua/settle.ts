/**
 * SETTLE — gives back the unused part of a reservation, once: {status, reserved, actual, refunded}
 * (SettleResult, lib/store/types.ts); the twin of refundState (lib/policy/algorithms/refund.ts).
 * KEYS[1]: the reservation record, then its commands' keys (one slot). ARGV[1]: the actual cost, [2]
 * now override (tests only). The record holds `c`, the reserved cost, `u`, the commands that take
 * the commit back, and `e`, its expiry (ms, store clock: exact, whatever PEXPIRE's granularity). Each
 * command is scaled to `units = max(0, c − actual)`, never below zero, only on keys that still exist
 * (a refund never creates one, nor touches an expiry); then `a` (actual) and `r` (refunded) are kept.
 */
import { luaNow } from "./now";

export const SETTLE_LUA = `
local function fmt(n) return string.format('%.0f', n) end
local actual = tonumber(ARGV[1])
${luaNow(2)}
local vals = redis.call('HMGET', KEYS[1], 'c', 'u', 'a', 'r', 'e')
if not vals[1] or tonumber(vals[5]) <= now then return {'unknown', 0, fmt(actual), 0} end
local cost = tonumber(vals[1])
if vals[3] then
  local status = 'replayed'
  if tonumber(vals[3]) ~= actual then status = 'conflict' end
  return {status, fmt(cost), vals[3], vals[4]}
end
local units = math.max(0, cost - actual)
if units > 0 then
  for _, cmd in ipairs(cjson.decode(vals[2])) do
    local name, key = cmd[1], cmd[2]
    if name == 'DECRBY' then
      -- fixed window, quota: that window's / period's count
      local v = tonumber(redis.call('GET', key))
      local d = v and math.min(units, v) or 0
      if d > 0 and fmt(d) ~= '0' then redis.call('DECRBY', key, fmt(d)) end
    elseif name == 'HINCRBY' then
      -- sliding-window sub-window, bucket level (units × window), global cap total and tenant
      local field = cmd[3]
      -- Nothing to give back from an empty field: -min(x, 0) would be written "-0", which
      -- HINCRBY refuses ("value is not an integer"), failing the whole settle.
      local v = tonumber(redis.call('HGET', key, field))
      local d = v and math.min(units * (-tonumber(cmd[4]) / cost), v) or 0
      if d > 0 and fmt(d) ~= '0' then redis.call('HINCRBY', key, field, '-' .. fmt(d)) end
    elseif name == 'ZREM' then
      local member = cmd[3]
      if #cmd == 3 and string.find(member, '^%d+:%d+:%d+$') then
        -- a sliding-log entry <atMs>:<n>:<cost>: it keeps cost − units
        local score = redis.call('ZSCORE', key, member)
        if score then
          local c = tonumber(string.match(member, ':(%d+)$'))
          local left = c - math.min(units, c)
          redis.call('ZREM', key, member)
          if left > 0 then redis.call('ZADD', key, score, (string.gsub(member, ':%d+$', ':' .. fmt(left)))) end
        end
      else
        -- a lease's units <token>:1..cost: the highest ones go
        for j = #cmd - math.min(units, #cmd - 2) + 1, #cmd do redis.call('ZREM', key, cmd[j]) end
      end
    end
  end
end
redis.call('HSET', KEYS[1], 'a', fmt(actual), 'r', fmt(units))
return {'settled', fmt(cost), fmt(actual), fmt(units)}
`;
