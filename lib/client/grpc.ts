/**
 * `sluice/client/grpc`: a `@grpc/grpc-js` server interceptor that asks Sluice once per call, before
 * the handler sees it. `new grpc.Server({ interceptors: [sluiceInterceptor({ client })] })`.
 *
 * - Denied 429 → `RESOURCE_EXHAUSTED`, with a `google.rpc.Status` in `grpc-status-details-bin`
 *   whose details hold a `google.rpc.RetryInfo` (`retry_delay` = the decision's Retry-After), the
 *   standard way gRPC clients learn when to retry; 401 → `UNAUTHENTICATED`; 403 →
 *   `PERMISSION_DENIED`; 503 (fail-closed) → `UNAVAILABLE`.
 * - The decision's RateLimit headers travel as metadata (lower-case names): in the response
 *   headers of an allowed call, in the trailers of a denied one.
 * - Concurrency leases are released when the call ends (status sent, or cancelled).
 *
 * Defaults: the key from metadata `x-api-key`, else `authorization: Bearer …`; the operation
 * `POST /<package.Service>/<Method>` — the HTTP/2 request gRPC makes, so policies match services
 * with patterns like `POST /orders.v1.Orders/*`; the address from the connection.
 */
import { Metadata, ServerInterceptingCall, status, type ServerInterceptor, type StatusObject } from "@grpc/grpc-js";
import type { SluiceClient } from "./client.js";
import { apiKeyFrom, decideHttp, type HttpVerdict } from "./http.js";

/** The call as readers see it: its method path (`/pkg.Service/Method`), request metadata and peer. */
export interface GrpcCallInfo {
  path: string;
  metadata: Metadata;
  remoteAddress: string | undefined;
}

export interface SluiceGrpcOptions {
  client: SluiceClient;
  key?: (call: GrpcCallInfo) => string | null | undefined;
  tenant?: (call: GrpcCallInfo) => string | null | undefined;
  ip?: (call: GrpcCallInfo) => string | null | undefined;
  operation?: (call: GrpcCallInfo) => string;
  cost?: (call: GrpcCallInfo) => number | undefined;
  /** Calls to let through without asking (default: grpc.health.v1 and server reflection). */
  skip?: (call: GrpcCallInfo) => boolean;
}

const GRPC_CODE_OF_STATUS: Record<number, status> = {
  400: status.INVALID_ARGUMENT,
  401: status.UNAUTHENTICATED,
  403: status.PERMISSION_DENIED,
  429: status.RESOURCE_EXHAUSTED,
  503: status.UNAVAILABLE,
};

const defaultSkip = (call: GrpcCallInfo) => call.path.startsWith("/grpc.health.v1.") || call.path.startsWith("/grpc.reflection.");

// --- google.rpc.Status with a RetryInfo, encoded by hand (four small messages; no protobuf runtime) ---

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

function field(number: number, bytes: Uint8Array | number[]): number[] {
  return [...varint((number << 3) | 2), ...varint(bytes.length), ...bytes];
}

function varintField(number: number, value: number): number[] {
  return value === 0 ? [] : [...varint(number << 3), ...varint(value)];
}

const utf8 = (s: string) => new TextEncoder().encode(s);

/** `google.rpc.Status { code, message, details: [Any(google.rpc.RetryInfo { retry_delay: { seconds } })] }`. */
export function statusDetails(code: number, message: string, retryAfterSeconds: number): Uint8Array {
  const duration = varintField(1, retryAfterSeconds);
  const retryInfo = field(1, duration);
  const any = [...field(1, utf8("type.googleapis.com/google.rpc.RetryInfo")), ...field(2, retryInfo)];
  return new Uint8Array([...varintField(1, code), ...field(2, utf8(message)), ...field(3, any)]);
}

/** grpc-js wants a Node Buffer for `-bin` metadata; this module runs on Node, where Buffer exists. */
function toBuffer(bytes: Uint8Array): never {
  const NodeBuffer = (globalThis as unknown as { Buffer: { from(b: Uint8Array): unknown } }).Buffer;
  return NodeBuffer.from(bytes) as never;
}

function addHeaders(metadata: Metadata, headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (key !== "content-type" && key !== "cache-control") metadata.set(key, value);
  }
}

function deniedStatus(verdict: Extract<HttpVerdict, { pass: false }>): Pick<StatusObject, "code" | "details" | "metadata"> {
  const code = GRPC_CODE_OF_STATUS[verdict.status] ?? status.RESOURCE_EXHAUSTED;
  const metadata = new Metadata();
  addHeaders(metadata, verdict.headers);
  const retry = verdict.problem.retryAfterSeconds ?? 0;
  if (code === status.RESOURCE_EXHAUSTED && retry > 0) {
    metadata.set("grpc-status-details-bin", toBuffer(statusDetails(code, verdict.problem.detail, retry)));
  }
  return { code, details: verdict.problem.detail, metadata };
}

export function sluiceInterceptor(options: SluiceGrpcOptions): ServerInterceptor {
  const skip = options.skip ?? defaultSkip;
  return (methodDescriptor, call) => {
    let headers: Record<string, string> = {};
    let release: () => Promise<boolean> = () => Promise.resolve(false);
    let sentMetadata = false;
    const intercepted: ServerInterceptingCall = new ServerInterceptingCall(call, {
      start(next) {
        next({
          onReceiveMetadata(metadata, proceed) {
            const info: GrpcCallInfo = { path: methodDescriptor.path, metadata, remoteAddress: call.getConnectionInfo().remoteAddress };
            if (skip(info)) return proceed(metadata);
            const get = (name: string) => {
              const v = metadata.get(name)[0];
              return typeof v === "string" ? v : undefined;
            };
            const parts = {
              method: "POST",
              path: info.path,
              key: options.key ? options.key(info) : apiKeyFrom(get),
              tenant: options.tenant?.(info),
              ip: options.ip ? options.ip(info) : info.remoteAddress,
              operation: options.operation?.(info),
              cost: options.cost?.(info),
            };
            decideHttp(options.client, parts).then(
              (verdict) => {
                if (!verdict.pass) return call.sendStatus(deniedStatus(verdict));
                headers = verdict.headers;
                release = verdict.release;
                proceed(metadata);
              },
              () => call.sendStatus({ code: status.INTERNAL, details: "rate limiter error" }),
            );
          },
          onCancel() {
            void release();
          },
        });
      },
      sendMetadata(metadata, next) {
        sentMetadata = true;
        addHeaders(metadata, headers);
        next(metadata);
      },
      sendStatus(statusObject, next) {
        // A call that ends without a message sends no headers: the RateLimit ones go in the trailers.
        if (!sentMetadata) {
          const trailers = statusObject.metadata ?? new Metadata();
          addHeaders(trailers, headers);
          statusObject = { ...statusObject, metadata: trailers };
        }
        next(statusObject);
        void release();
      },
    });
    return intercepted;
  };
}
