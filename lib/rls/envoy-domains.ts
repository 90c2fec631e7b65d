/**
 * A `rateLimitService` decision (lib/envoy/engine.ts) as Envoy's RateLimitResponse: the statuses
 * as envoyproxy/ratelimit writes them (`current_limit` only where a rule applied,
 * `duration_until_reset` only where something was counted), no headers — theirs adds none unless
 * told to — except `x-sluice-reason: store_unavailable` on an OVER_LIMIT that a `closed` failure
 * mode gave (the store could not answer), so the denial says why.
 */
import type { EnvoyDecided } from "../envoy/accounting";
import { REASON_HEADER } from "./mapping";
import type { RlsDescriptorStatus, RlsHeader, RlsResponseMessage } from "./messages";

export function envoyRlsResponse(decided: EnvoyDecided): RlsResponseMessage {
  const { response, counts } = decided;
  const statuses = response.statuses.map((s): RlsDescriptorStatus => {
    const out: RlsDescriptorStatus = { code: s.code, limit_remaining: s.limit_remaining };
    if (s.current_limit) out.current_limit = { ...s.current_limit };
    if (s.duration_until_reset) out.duration_until_reset = { seconds: s.duration_until_reset.seconds, nanos: 0 };
    return out;
  });
  const headers: RlsHeader[] = [];
  const closed = response.statuses.some((s, i) => s.code === "OVER_LIMIT" && counts[i]?.counting === "unavailable");
  if (response.overall_code === "OVER_LIMIT" && closed) headers.push({ key: REASON_HEADER, value: "store_unavailable" });
  return { overall_code: response.overall_code, statuses, response_headers_to_add: headers, request_headers_to_add: [] };
}
