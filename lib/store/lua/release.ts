/**
 * RELEASE — frees a concurrency lease (the twin of releaseLease in
 * lib/policy/algorithms/concurrency.ts). KEYS[1]: the lease's counter. ARGV: [1] token, [2] cost,
 * [3] now override (tests only). Returns 1 if the lease was live, else 0.
 */
import { luaNow } from "./now";

export const RELEASE_LUA = `
${luaNow(3)}
local score = redis.call('ZSCORE', KEYS[1], ARGV[1] .. ':1')
if not score or tonumber(score) <= now then return 0 end
for j = 1, tonumber(ARGV[2]) do redis.call('ZREM', KEYS[1], ARGV[1] .. ':' .. j) end
return 1
`;
