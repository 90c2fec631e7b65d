/**
 * ENVOY_COUNT: envoyproxy/ratelimit's fixed window (src/redis/fixed_cache_impl.go), every counter
 * of one ShouldRateLimit in one script, so a call is one atomic round trip. Its TypeScript twin is
 * lib/policy/envoy/memory.ts (`EnvoyMemoryCounters.incrBy` with `envoyCounterKey`), held equal by
 * lib/envoy/redis-store.int.test.ts.
 *
 * KEYS[i]  a counter's key up to its window (its hash tag is the whole counter: one slot per key)
 * ARGV[1]  now in ms, or '' for Redis TIME (tests pass their clock)
 * ARGV[2]  seconds a key outlives its window (1; 60 under a test clock, whose time does not pass)
 * ARGV[1+2i], ARGV[2+2i]  the i-th counter's window (whole seconds) and hits (0: read only)
 * Returns  { now, count_1, …, count_n }: the counts after the call.
 *
 * Redis: a STRING `<key>:<windowStartSeconds>`, INCRBY then EXPIRE to the window's end, as theirs
 * (they set the unit's length from now; the window's end is the same or sooner, never later).
 */
import { luaNow } from "../store/lua/now";

export const ENVOY_COUNT_LUA = `${luaNow(1)}
local pad = tonumber(ARGV[2])
local now_s = math.floor(now / 1000)
local out = { now }
for i = 1, #KEYS do
  local window = tonumber(ARGV[1 + 2 * i])
  local hits = tonumber(ARGV[2 + 2 * i])
  local start = now_s - (now_s % window)
  local k = KEYS[i] .. ':' .. string.format('%d', start)
  if hits > 0 then
    out[i + 1] = redis.call('INCRBY', k, hits)
    redis.call('EXPIRE', k, start + window - now_s + pad)
  else
    out[i + 1] = tonumber(redis.call('GET', k) or '0')
  end
end
return out
`;
