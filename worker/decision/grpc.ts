/**
 * The decision server's gRPC adapter (h2c on SLUICE_GRPC_PORT, default 8081): Envoy's rate limit
 * service `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` and `grpc.health.v1.Health/Check`,
 * a sibling of the HTTP adapter in front of the same engine. The contract is docs/gateways.md
 * "Envoy, Istio, Contour: the rate limit service protocol" (and docs/decision-api.md).
 *
 * One call: the service token from the metadata (`authorization: Bearer <token>` or
 * `x-sluice-token`, the same tokens `/v1/check` accepts), judged before the message is read; or,
 * for gateways that cannot set metadata and only with SLUICE_RLS_DESCRIPTOR_TOKENS=1, a
 * `sluice_token` entry in every descriptor → lib/rls/mapping.ts turns the
 * descriptors into decision requests → `engine.decide` for each, all started in the same
 * event-loop turn, so the Redis store sends them as one DECIDE call → the answers become one
 * RateLimitResponse. Each descriptor is a decision like any `/v1/check` one: counted in usage,
 * metrics, dashboards and billing by the engine itself.
 *
 * Status codes: UNAUTHENTICATED without an accepted token; INVALID_ARGUMENT naming the field for
 * malformed descriptors or another domain, and for bytes that are no RateLimitRequest;
 * RESOURCE_EXHAUSTED for a message over MAX_MESSAGE_BYTES; UNAVAILABLE before a policy is loaded
 * or while draining; INTERNAL for a bug, with a fixed message. A denial is never an error: it is
 * OVER_LIMIT.
 *
 * The transport is grpc-server.ts (unary gRPC on node:http2) and the messages lib/rls/decode.ts and
 * lib/rls/encode.ts, both by hand: @grpc/grpc-js on this side cost more CPU per call than the whole
 * HTTP path.
 */
import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http2";
import { Counter } from "prom-client";
import { bearerToken } from "../../lib/auth/bearer";
import type { DecisionAnswer } from "../../lib/decision/answer";
import type { DecisionRequest } from "../../lib/decision/engine";
import type { DecisionMetrics } from "../../lib/decision/metrics";
import { errorMessage, type Logger } from "../../lib/log";
import { decodeHealthCheckRequest, decodeRateLimitRequest, ProtoDecodeError } from "../../lib/rls/decode";
import { encodeHealthCheckResponse, encodeRateLimitResponse } from "../../lib/rls/encode";
import type { EnvoyDecider } from "../../lib/envoy/engine";
import { descriptorToken } from "../../lib/rls/mapping";
import { HEALTH_SERVICE, RLS_SERVICE, type RlsRequestMessage } from "../../lib/rls/messages";
import type { GrpcLimits } from "../../lib/net/grpc-limits";
import { createRlsAnswer } from "./rls-answer";
import { createUnaryGrpcServer, GRPC_STATUS_NAMES, GrpcError, GrpcStatus, type GrpcStatusCode, type UnaryAnswer, type UnaryCall, type UnaryGrpcServer, type UnaryHandler } from "./grpc-server";

/** The same bound as an HTTP body (64 KiB): larger messages get RESOURCE_EXHAUSTED before they are read. */
export const MAX_MESSAGE_BYTES = 64 * 1024;
/** How long draining waits for calls in flight before it cuts the connections. */
const DRAIN_MS = 10_000;
const SHOULD_RATE_LIMIT = `/${RLS_SERVICE}/ShouldRateLimit`;
/** Metadata asking for the `server-timing` trailer (any value). */
export const TIMING_METADATA = "x-sluice-server-timing";
const UNAUTHENTICATED_MESSAGE = "missing or wrong service token: send `authorization: Bearer <token>` or `x-sluice-token` in the metadata";

export interface DecisionGrpcDeps {
  engine: { decide(request: DecisionRequest): Promise<DecisionAnswer>; release(leaseId: string): Promise<boolean> };
  tokens: { accepts(token: string | undefined): boolean };
  /** SLUICE_RLS_DOMAIN: the `domain` whose descriptors carry Sluice's own keys (api_key, tenant, operation…). */
  domain: string;
  /** Every other `domain`: the policy's `rateLimitService` section (lib/envoy/engine.ts); absent: refused. */
  envoy?: Pick<EnvoyDecider, "decide">;
  /** Whether decisions can be made (a policy is loaded and the store answers): the health answer. */
  readiness: () => { ready: boolean };
  metrics: DecisionMetrics;
  /** For what goes wrong (nothing is written per call). */
  logger: Logger;
  /** Streams, bytes and time one connection may hold (SLUICE_GRPC_*; DEFAULT_GRPC_LIMITS when unset). */
  limits?: GrpcLimits;
  /**
   * SLUICE_RLS_DESCRIPTOR_TOKENS: a call without a token in its metadata may carry it in every
   * descriptor (`sluice_token`, for Contour), so its message is read before it is judged. Off
   * (the default): such a call is UNAUTHENTICATED from its headers, before its message is read.
   */
  descriptorTokens?: boolean;
  /** Sends the store call of the decisions just started (CounterStore.flush): after each turn's calls. */
  flushStore?: () => void;
}

export interface DecisionGrpc {
  server: UnaryGrpcServer["server"];
  /** Binds `host:port` (0: a free port) and resolves to the port bound. */
  listen(port: number, host: string): Promise<number>;
  /** Health turns NOT_SERVING, new calls get UNAVAILABLE; calls in flight finish (at most 10 s). */
  drain(): Promise<void>;
}

function first(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The service token: `authorization: Bearer <token>` or `x-sluice-token: <token>`. */
export function tokenOf(headers: IncomingHttpHeaders): string | undefined {
  return bearerToken(first(headers, "authorization")) ?? first(headers, "x-sluice-token")?.trim();
}

/** Envoy's x-request-id for the call, when it sent a sane one, else a fresh id. */
function requestIdOf(headers: IncomingHttpHeaders): string {
  const given = first(headers, "x-request-id");
  return given !== undefined && /^[\w.:@/+=-]{1,128}$/.test(given) ? given : randomUUID();
}

export function createDecisionGrpc(deps: DecisionGrpcDeps): DecisionGrpc {
  const { tokens, logger } = deps;
  const answer = createRlsAnswer({ engine: deps.engine, envoy: deps.envoy, domain: deps.domain });
  // Bounded labels: the gRPC status code names (about a dozen), never a key or a tenant.
  // Counted in plain numbers per call and added to the counter when it is read (prom-client's
  // `collect`, on every scrape): a labelled child's inc hashes its labels on every call (#27).
  const counts = new Map<string, { labels: { grpc_code: string; overall_code: string }; n: number }>();
  const okCounts: Partial<Record<string, { n: number }>> = {};
  new Counter({
    name: "sluice_rls_calls_total",
    help: "ShouldRateLimit calls answered, by gRPC status (OK includes OVER_LIMIT answers) and overall code.",
    labelNames: ["grpc_code", "overall_code"],
    registers: [deps.metrics.registry],
    collect() {
      for (const c of counts.values()) {
        if (c.n === 0) continue;
        this.inc(c.labels, c.n);
        c.n = 0;
      }
    },
  });
  function tally(grpcCode: GrpcStatusCode, overall: string): { labels: { grpc_code: string; overall_code: string }; n: number } {
    const id = `${grpcCode}|${overall}`;
    let c = counts.get(id);
    if (!c) counts.set(id, (c = { labels: { grpc_code: GRPC_STATUS_NAMES[grpcCode] ?? String(grpcCode), overall_code: overall }, n: 0 }));
    return c;
  }
  function count(grpcCode: GrpcStatusCode, overall: string): void {
    tally(grpcCode, overall).n++;
  }
  /** An answered call (grpc-status OK) by its overall code: the hot path's count, without the id string. */
  function countOk(overall: string): void {
    (okCounts[overall] ??= tally(GrpcStatus.OK, overall)).n++;
  }
  const refuse = (code: GrpcStatusCode, details: string): never => {
    count(code, "-");
    throw new GrpcError(code, details);
  };

  let draining = false;

  /**
   * ShouldRateLimit's token, judged from the headers before the message is read: a wrong token,
   * or none (unless descriptor tokens are on), buffers nothing of the call. A call let in without
   * one is judged by its descriptors' token after decoding (shouldRateLimit).
   */
  function admitShouldRateLimit(headers: IncomingHttpHeaders): GrpcError | undefined {
    const token = tokenOf(headers);
    if (token === undefined && deps.descriptorTokens) return undefined;
    if (tokens.accepts(token)) return undefined;
    count(GrpcStatus.UNAUTHENTICATED, "-");
    return new GrpcError(GrpcStatus.UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE);
  }

  /**
   * ShouldRateLimit: decode, authenticate, decide, encode. A refusal is thrown (a GrpcError, also
   * from within the promise); written with `then` rather than `async`, one promise less per call.
   */
  function shouldRateLimit(call: UnaryCall): Promise<UnaryAnswer> {
    if (draining) return refuse(GrpcStatus.UNAVAILABLE, "draining: this decision server is shutting down");
    let request: RlsRequestMessage;
    try {
      request = decodeRateLimitRequest(call.message);
    } catch (error) {
      if (error instanceof ProtoDecodeError) return refuse(GrpcStatus.INVALID_ARGUMENT, `not a RateLimitRequest: ${error.message}`);
      throw error;
    }
    // A token in the metadata was judged, and accepted, before the message was read
    // (admitShouldRateLimit: the server admits every call of this method so). Gateways that
    // cannot set metadata (Contour) put the token in every descriptor instead, judged here.
    if (deps.descriptorTokens && tokenOf(call.headers) === undefined && !tokens.accepts(descriptorToken(request))) {
      return refuse(GrpcStatus.UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE);
    }
    // The server-timing trailer, on request only: Envoy drops it, and node:http2's per-call trailer
    // object cost about 2 µs of a call's ~45 (docs/benchmarks.md, #27).
    const started = call.headers[TIMING_METADATA] === undefined ? -1 : performance.now();
    return answer(request).then(
      (result): UnaryAnswer => {
        if (!result.ok) return refuse(result.kind === "not_ready" ? GrpcStatus.UNAVAILABLE : GrpcStatus.INVALID_ARGUMENT, result.message);
        countOk(result.response.overall_code);
        const framed = encodeRateLimitResponse(result.response);
        // Like /v1/check's Server-Timing: how long the decisions took, store call included.
        return started < 0 ? { framed } : { framed, trailers: { "server-timing": `decide;dur=${(performance.now() - started).toFixed(2)}` } };
      },
      (error: unknown) => {
        logger.error({ reqId: requestIdOf(call.headers), err: errorMessage(error) }, "internal error in ShouldRateLimit");
        return refuse(GrpcStatus.INTERNAL, "internal error");
      },
    );
  }

  const KNOWN_SERVICES = new Set(["", RLS_SERVICE]);
  function check(call: UnaryCall): UnaryAnswer {
    let service: string;
    try {
      service = decodeHealthCheckRequest(call.message).service ?? "";
    } catch (error) {
      if (error instanceof ProtoDecodeError) throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, `not a HealthCheckRequest: ${error.message}`);
      throw error;
    }
    if (!KNOWN_SERVICES.has(service)) throw new GrpcError(GrpcStatus.NOT_FOUND, `unknown service ${JSON.stringify(service.slice(0, 100))}`);
    return { framed: encodeHealthCheckResponse(!draining && deps.readiness().ready ? "SERVING" : "NOT_SERVING") };
  }

  // Health's Watch (a stream) is not served (UNIMPLEMENTED, as an unknown method): Envoy's and
  // Kubernetes' gRPC probes call Check.
  const grpc = createUnaryGrpcServer({
    methods: new Map<string, UnaryHandler>([
      [SHOULD_RATE_LIMIT, shouldRateLimit],
      [`/${HEALTH_SERVICE}/Check`, check],
    ]),
    maxMessageBytes: MAX_MESSAGE_BYTES,
    // Health probes carry no token; only ShouldRateLimit is judged before its message.
    admit: (path, headers) => (path === SHOULD_RATE_LIMIT ? admitShouldRateLimit(headers) : undefined),
    limits: deps.limits,
    drainMs: DRAIN_MS,
    logger,
    afterStart: deps.flushStore,
  });

  return {
    server: grpc.server,
    listen: (port, host) => grpc.listen(port, host),
    drain() {
      draining = true;
      return grpc.drain();
    },
  };
}
