/**
 * The Lua twin of lib/policy/algorithms/quota.ts and lib/policy/quota-period.ts (calendar day or
 * month, UTC). Redis: a STRING `<key>:<YYYY-MM-DD | YYYY-MM>`.
 */
export const QUOTA_LUA = `local function civil_from_days(days)
  local z = days + 719468
  local era = floor(z / 146097)
  local doe = z - era * 146097
  local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
  local mp = floor((5 * doy + 2) / 153)
  local d = doy - floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end

local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = floor(y / 400)
  local yoe = y - era * 400
  local mp = m > 2 and m - 3 or m + 9
  local doy = floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

-- The period's end and label at \`now\`, worked out once per call and period (the decisions of one
-- call share the clock, so they share the period; quotaPeriods is the prelude's, reset per call).
local function quota_period(period)
  local known = quotaPeriods[period]
  if known then return known[1], known[2] end
  local DAY = 86400000
  local days = floor(now / DAY)
  local y, m, d = civil_from_days(days)
  local periodEnd, label
  if period == 'day' then
    periodEnd = (days + 1) * DAY
    label = string.format('%d-%02d-%02d', y, m, d)
  else
    local ny, nm = y, m + 1
    if m == 12 then ny, nm = y + 1, 1 end
    periodEnd = days_from_civil(ny, nm, 1) * DAY
    label = string.format('%d-%02d', y, m)
  end
  quotaPeriods[period] = {periodEnd, label}
  return periodEnd, label
end

local function quota(key, c, o)
  local periodEnd, label = quota_period(c.period)
  local k = key .. ':' .. label
  local used = tonumber(redis.call('GET', k) or '0')
  local idle = max(0, c.limit - used)
  o.k, o.fresh = k, used == 0
  if c.overage == 'bill' then
    local overage = max(0, used + cost - c.limit) - max(0, used - c.limit)
    return pass(o, max(0, c.limit - used - cost), idle, periodEnd, 0, overage)
  end
  if used + cost > c.limit then
    return deny(o, 'quota_exhausted', idle, periodEnd, periodEnd - now)
  end
  return pass(o, c.limit - used - cost, idle, periodEnd)
end
local quota_commit = string_counter_commit
`;
