/**
 * The decision server's gRPC adapter (h2c on SLUICE_GRPC_PORT, default 8081): Envoy's rate limit
 * service `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` and `grpc.health.v1.Health/Check`,
 * a sibling of the HTTP adapter in front of the same engine. The contract is the README section
 * "Envoy, Istio, Contour: the rate limit service protocol" (and docs/decision-api.md).
 *
 * One call: the service token from the metadata (`authorization: Bearer <token>` or
 * `x-sluice-token`, the same tokens `/v1/check` accepts; or, for gateways that cannot set
 * metadata, a `sluice_token` entry in every descriptor) → lib/rls/mapping.ts turns the
 * descriptors into decision requests → `engine.decide` for each, all started in the same
 * event-loop turn, so the Redis store sends them as one DECIDE call → the answers become one
 * RateLimitResponse. Each descriptor is a decision like any `/v1/check` one: counted in usage,
 * metrics, dashboards and billing by the engine itself.
 *
 * Status codes: UNAUTHENTICATED without an accepted token; INVALID_ARGUMENT naming the field for
 * malformed descriptors or another domain; RESOURCE_EXHAUSTED (grpc-js itself) for a message over
 * MAX_MESSAGE_BYTES; UNAVAILABLE before a policy is loaded or while draining; INTERNAL for a bug,
 * with a fixed message. A denial is never an error: it is OVER_LIMIT.
 */
import { randomUUID } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { Counter } from "prom-client";
import type { DecisionAnswer } from "../../lib/decision/answer";
import { NotReadyError, type DecisionRequest } from "../../lib/decision/engine";
import type { DecisionMetrics } from "../../lib/decision/metrics";
import { errorMessage, type Logger } from "../../lib/log";
import { descriptorToken, planRateLimit, rateLimitResponse } from "../../lib/rls/mapping";
import { healthServiceDefinition, RLS_SERVICE, rlsServiceDefinition, type RlsRequestMessage, type RlsResponseMessage } from "../../lib/rls/protos";

/** The same bound as an HTTP body (64 KiB): larger messages get RESOURCE_EXHAUSTED before they are decoded. */
export const MAX_MESSAGE_BYTES = 64 * 1024;
/** How long draining waits for calls in flight before it cuts the connections. */
const DRAIN_MS = 10_000;

export interface DecisionGrpcDeps {
  engine: { decide(request: DecisionRequest): Promise<DecisionAnswer>; release(leaseId: string): Promise<boolean> };
  tokens: { accepts(token: string | undefined): boolean };
  /** SLUICE_RLS_DOMAIN: the only `domain` answered. */
  domain: string;
  /** Whether decisions can be made (a policy is loaded and the store answers): the health answer. */
  readiness: () => { ready: boolean };
  metrics: DecisionMetrics;
  /** For what goes wrong (nothing is written per call). */
  logger: Logger;
}

export interface DecisionGrpc {
  server: grpc.Server;
  /** Binds `host:port` (0: a free port) and resolves to the port bound. */
  listen(port: number, host: string): Promise<number>;
  /** Health turns NOT_SERVING, new calls get UNAVAILABLE; calls in flight finish (at most 10 s). */
  drain(): Promise<void>;
}

function first(metadata: grpc.Metadata, name: string): string | undefined {
  const value = metadata.get(name)[0];
  return typeof value === "string" ? value : undefined;
}

/** The service token: `authorization: Bearer <token>` or `x-sluice-token: <token>`. */
export function tokenOf(metadata: grpc.Metadata): string | undefined {
  const auth = first(metadata, "authorization");
  const m = auth === undefined ? null : /^Bearer\s+(.+)$/i.exec(auth.trim());
  if (m) return m[1]!.trim();
  return first(metadata, "x-sluice-token")?.trim();
}

/** Envoy's x-request-id for the call, when it sent a sane one, else a fresh id. */
function requestIdOf(metadata: grpc.Metadata): string {
  const given = first(metadata, "x-request-id");
  return given !== undefined && /^[\w.:@/+=-]{1,128}$/.test(given) ? given : randomUUID();
}

function status(code: grpc.status, details: string): Partial<grpc.StatusObject> {
  return { code, details, metadata: new grpc.Metadata() };
}

export function createDecisionGrpc(deps: DecisionGrpcDeps): DecisionGrpc {
  const { engine, tokens, domain, logger } = deps;
  const server = new grpc.Server({
    "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
    "grpc.max_send_message_length": MAX_MESSAGE_BYTES * 4,
    // Channelz keeps per-call statistics nobody here reads; the hot path does without it.
    "grpc.enable_channelz": 0,
  });
  // Bounded labels: the gRPC status code names (about a dozen), never a key or a tenant.
  const calls = new Counter({
    name: "sluice_rls_calls_total",
    help: "ShouldRateLimit calls answered, by gRPC status (OK includes OVER_LIMIT answers) and overall code.",
    labelNames: ["grpc_code", "overall_code"],
    registers: [deps.metrics.registry],
  });
  const counted = new Map<string, { inc(): void }>();
  function count(grpcCode: grpc.status, overall: string): void {
    const id = `${grpcCode}|${overall}`;
    let child = counted.get(id);
    if (!child) counted.set(id, (child = calls.labels({ grpc_code: grpc.status[grpcCode] ?? String(grpcCode), overall_code: overall })));
    child.inc();
  }

  let draining = false;

  async function shouldRateLimit(
    call: grpc.ServerUnaryCall<RlsRequestMessage, RlsResponseMessage>,
    callback: grpc.sendUnaryData<RlsResponseMessage>,
  ): Promise<void> {
    const refuse = (code: grpc.status, details: string) => {
      count(code, "-");
      callback(status(code, details));
    };
    if (draining) return refuse(grpc.status.UNAVAILABLE, "draining: this decision server is shutting down");
    // Gateways that cannot set metadata (Contour) put the token in every descriptor instead.
    if (!tokens.accepts(tokenOf(call.metadata) ?? descriptorToken(call.request))) {
      return refuse(grpc.status.UNAUTHENTICATED, "missing or wrong service token: send `authorization: Bearer <token>` or `x-sluice-token` in the metadata");
    }
    const plan = planRateLimit(call.request, { domain });
    if (!plan.ok) return refuse(grpc.status.INVALID_ARGUMENT, plan.error.message);
    let answers: DecisionAnswer[];
    const started = performance.now();
    try {
      // Started in one turn: the store coalesces them into one call.
      answers = await Promise.all(plan.requests.map((r) => engine.decide(r)));
    } catch (error) {
      if (error instanceof NotReadyError) return refuse(grpc.status.UNAVAILABLE, "no policy loaded yet");
      logger.error({ reqId: requestIdOf(call.metadata), err: errorMessage(error) }, "internal error in ShouldRateLimit");
      return refuse(grpc.status.INTERNAL, "internal error");
    }
    const { response, leasesToRelease } = rateLimitResponse(answers);
    // The request is denied, so nobody will release what its other descriptors leased.
    for (const lease of leasesToRelease) void engine.release(lease).catch(() => undefined);
    count(grpc.status.OK, response.overall_code);
    // Like /v1/check's Server-Timing: how long the decisions took, store call included.
    const trailer = new grpc.Metadata();
    trailer.set("server-timing", `decide;dur=${(performance.now() - started).toFixed(2)}`);
    callback(null, response, trailer);
  }

  const KNOWN_SERVICES = new Set(["", RLS_SERVICE]);
  function check(call: grpc.ServerUnaryCall<{ service?: string }, { status: string }>, callback: grpc.sendUnaryData<{ status: string }>): void {
    const service = call.request.service ?? "";
    if (!KNOWN_SERVICES.has(service)) {
      callback(status(grpc.status.NOT_FOUND, `unknown service ${JSON.stringify(service.slice(0, 100))}`));
      return;
    }
    callback(null, { status: !draining && deps.readiness().ready ? "SERVING" : "NOT_SERVING" });
  }

  server.addService(rlsServiceDefinition(), {
    ShouldRateLimit: (call: grpc.ServerUnaryCall<RlsRequestMessage, RlsResponseMessage>, callback: grpc.sendUnaryData<RlsResponseMessage>) => {
      shouldRateLimit(call, callback).catch((error: unknown) => {
        logger.error({ reqId: requestIdOf(call.metadata), err: errorMessage(error) }, "internal error in ShouldRateLimit");
        callback(status(grpc.status.INTERNAL, "internal error"));
      });
    },
  });
  // Watch (a stream) is left to grpc-js's UNIMPLEMENTED: Envoy's and Kubernetes' gRPC probes call Check.
  server.addService(healthServiceDefinition(), { Check: check });

  return {
    server,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        // An IPv6 host needs brackets in a gRPC target.
        const target = host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
        server.bindAsync(target, grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound)));
      });
    },
    drain() {
      draining = true;
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, DRAIN_MS);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
