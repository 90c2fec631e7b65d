/**
 * The names and message shapes of Envoy's rate limit service and gRPC health, as the decision
 * server's hand-written codec (lib/rls/decode.ts, lib/rls/encode.ts) reads and writes them: field names as in the
 * .proto (snake_case), enums by name, 64-bit integers as numbers, absent fields absent — the shape
 * @grpc/proto-loader gives with lib/rls/protos.ts's options, which the codec's tests hold it to.
 * No dependency: production imports this module, never lib/rls/protos.ts (which loads
 * @grpc/grpc-js and protobufjs for tests and the benchmark).
 */
export const RLS_SERVICE = "envoy.service.ratelimit.v3.RateLimitService";
export const HEALTH_SERVICE = "grpc.health.v1.Health";

export type RlsCode = "UNKNOWN" | "OK" | "OVER_LIMIT";
export type RlsUnit = "UNKNOWN" | "SECOND" | "MINUTE" | "HOUR" | "DAY" | "WEEK" | "MONTH" | "YEAR";

export interface RlsEntryMessage {
  key?: string;
  value?: string;
}

export interface RlsDescriptorMessage {
  entries?: RlsEntryMessage[];
  limit?: { requests_per_unit?: number; unit?: string } | null;
  hits_addend?: { value?: number } | null;
}

export interface RlsRequestMessage {
  domain?: string;
  descriptors?: RlsDescriptorMessage[];
  hits_addend?: number;
}

export interface RlsRateLimit {
  name: string;
  requests_per_unit: number;
  unit: RlsUnit;
}

export interface RlsDescriptorStatus {
  code: RlsCode;
  current_limit?: RlsRateLimit;
  limit_remaining: number;
  duration_until_reset?: { seconds: number; nanos?: number };
}

export interface RlsHeader {
  key: string;
  value: string;
}

export interface RlsResponseMessage {
  overall_code: RlsCode;
  statuses: RlsDescriptorStatus[];
  response_headers_to_add: RlsHeader[];
  request_headers_to_add: RlsHeader[];
}
