/**
 * The Lua twin of lib/policy/algorithms/quota.ts. Redis: a STRING `<key>:<label>`. A tenant quota
 * carries its window (`c.win`, lib/policy/quota-window.ts): the current billing period and the next,
 * worked out in TypeScript (time zones stay there); this picks one by its clock. A slot's `carry`
 * names the old tier's quota whose counter also counts (a plan change under `full`). Without a
 * window: the UTC calendar (lib/policy/quota-period.ts).
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

-- The period's end and label at \`now\`, worked out once per call and period.
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

-- The slot of the window at \`now\` (pickSlot, lib/policy/quota-window.ts), cached on the parsed limit.
local function quota_slot(c)
  if c.win == '' then
    local periodEnd, label = quota_period(c.period)
    return periodEnd, label, c.limit, ''
  end
  if not c.wEnd then
    local f, n = {}, 0
    for part in string.gmatch(c.win, '([^;]*);') do
      n = n + 1
      f[n] = part
    end
    local i = now < tonumber(f[1]) and 0 or 4
    c.wEnd, c.wLabel, c.wLimit, c.wCarry = tonumber(f[i + 1]), f[i + 2], tonumber(f[i + 3]), f[i + 4]
  end
  return c.wEnd, c.wLabel, c.wLimit, c.wCarry
end

local function quota(key, c, o)
  local periodEnd, label, limit, carry = quota_slot(c)
  local k = key .. ':' .. label
  local own = tonumber(redis.call('GET', k) or '0')
  local used = own
  if carry ~= '' then
    -- the old tier's counter: this key up to its last ':q:', then the carried quota's id
    used = used + tonumber(redis.call('GET', string.match(key, '^(.*:q:)') .. carry .. ':' .. label) or '0')
  end
  local idle = max(0, limit - used)
  o.k, o.fresh = k, own == 0
  if c.overage == 'bill' then
    local overage = max(0, used + cost - limit) - max(0, used - limit)
    return pass(o, max(0, limit - used - cost), idle, periodEnd, 0, overage)
  end
  if used + cost > limit then
    return deny(o, 'quota_exhausted', idle, periodEnd, periodEnd - now)
  end
  return pass(o, limit - used - cost, idle, periodEnd)
end
local quota_commit = string_counter_commit
`;
