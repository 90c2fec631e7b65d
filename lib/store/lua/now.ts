/** The clock of RELEASE and SETTLE: `now` in ms from ARGV[arg] when a test passes its clock, else Redis server TIME (DECIDE's: prelude.ts). */
export function luaNow(arg: number): string {
  return `local now
if ARGV[${arg}] ~= nil and ARGV[${arg}] ~= '' then
  now = tonumber(ARGV[${arg}])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end`;
}
