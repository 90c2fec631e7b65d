/**
 * RELEASE — frees a concurrency lease (releaseLease's twin, lib/policy/algorithms/concurrency.ts).
 * KEYS[1]: the lease's counter. ARGV: [1] token, [2] the units the lease id names, [3] now override
 * (tests only). The id's units are checked against the lease's record, and the loop runs over the
 * units granted. Returns 1 released, 0 no such live lease, -1 the id names other units (nothing freed).
 */
import { LEASE_RECORD_SUFFIX } from "../lease-id";
import { luaNow } from "./now";

export const RELEASE_LUA = `
${luaNow(3)}
local score = redis.call('ZSCORE', KEYS[1], ARGV[1] .. ':1')
if not score or tonumber(score) <= now then return 0 end
local record = KEYS[1] .. '${LEASE_RECORD_SUFFIX}' .. ARGV[1]
local granted = redis.call('GET', record)
if not granted then return 0 end
if granted ~= ARGV[2] then return -1 end
redis.call('DEL', record)
for j = 1, tonumber(granted) do redis.call('ZREM', KEYS[1], ARGV[1] .. ':' .. j) end
return 1
`;
