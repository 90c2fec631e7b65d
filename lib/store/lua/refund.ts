/**
 * REFUND — takes back the commit of one DECIDE call (lib/store/redis/cluster.ts). KEYS: the undo
 * commands' keys, one slot. ARGV: per command, `name, argc, args…` (its arguments after the key).
 * Only DECRBY / HINCRBY / ZREM, and only to a key that still exists (a refund never creates one).
 */
export const REFUND_LUA = `
local a = 1
for i = 1, #KEYS do
  local name, argc = ARGV[a], tonumber(ARGV[a + 1])
  local args = {}
  for j = 1, argc do args[j] = ARGV[a + 1 + j] end
  a = a + 2 + argc
  if name == 'DECRBY' or name == 'HINCRBY' or name == 'ZREM' then
    if redis.call('EXISTS', KEYS[i]) == 1 then redis.call(name, KEYS[i], unpack(args)) end
  end
end
return #KEYS
`;
