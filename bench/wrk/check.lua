-- wrk (LuaJIT, Lua 5.1) load for bench/side-by-side.ts: POST one check per request, the client
-- address drawn from BENCH_ADDRESSES addresses (a sliding-window counter per client IP), one API key.
-- Every target gets the same bytes; each reads what it needs (Sluice: key, operation, ip; the lean
-- ceiling and the peer: ip). Prints one RESULT line for the runner.
local token = os.getenv("BENCH_TOKEN") or ""
local key = os.getenv("BENCH_KEY") or ""
local addresses = tonumber(os.getenv("BENCH_ADDRESSES") or "100000")
local batch = tonumber(os.getenv("BENCH_BATCH") or "1")
local fixedIp = os.getenv("BENCH_FIXED_IP")
wrk.method = "POST"
wrk.path = os.getenv("BENCH_PATH") or "/v1/check"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. token

local function address()
  if fixedIp then return fixedIp end
  local n = math.random(0, addresses - 1)
  return "10." .. math.floor(n / 65536) .. "." .. (math.floor(n / 256) % 256) .. "." .. (n % 256)
end

local function one()
  return '{"key":"' .. key .. '","operation":"GET /v1/orders","ip":"' .. address() .. '"}'
end

function init(args)
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 1000)
end

function request()
  if batch == 1 then return wrk.format(nil, nil, nil, one()) end
  local parts = {}
  for i = 1, batch do parts[i] = one() end
  return wrk.format(nil, nil, nil, '{"requests":[' .. table.concat(parts, ",") .. ']}')
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d\n", summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write + e.status + e.timeout))
end
