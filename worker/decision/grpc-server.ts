/**
 * A unary gRPC server on node:http2 (h2c), just what the rate limit service needs: a method is a
 * path, a request is one length-prefixed message, an answer is one message and a status in the
 * trailers (or a status alone, "trailers-only"). The protocol is gRPC over HTTP/2
 * (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md); what it does not implement
 * is said here:
 *
 * - messages are not compressed (Envoy does not compress rate limit calls, grpc-js clients do not
 *   unless asked): a compressed one is UNIMPLEMENTED, like an unknown `grpc-encoding`;
 * - a message over `maxMessageBytes` is RESOURCE_EXHAUSTED as soon as its 5-byte header announces
 *   it, before its bytes are read; a second message, or none, UNIMPLEMENTED (unary methods);
 * - `grpc-timeout` is honoured without a timer per call: an answer ready after the deadline is
 *   DEADLINE_EXCEEDED instead, and a client that gave up (RST_STREAM) gets nothing. Every handler
 *   here is bounded anyway (the decision's own store budget);
 * - a request that is not gRPC (content-type) is HTTP 415, an unknown path UNIMPLEMENTED;
 * - draining: GOAWAY to every connection, calls in flight finish, then the connections close (cut
 *   after `drainMs`).
 *
 * It replaced @grpc/grpc-js on the serving side, whose per-call machinery (interceptors,
 * metadata objects, per-call timers, stream wrappers, protobufjs conversions) cost more CPU than
 * the whole HTTP decision path (docs/benchmarks.md). Clients are still grpc-js and Envoy: the
 * integration tests speak to it with grpc-js.
 */
import http2 from "node:http2";
import type { Logger } from "../../lib/log";
import { errorMessage } from "../../lib/log";

/** gRPC status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcStatusCode = (typeof GrpcStatus)[keyof typeof GrpcStatus];
export const GRPC_STATUS_NAMES: readonly string[] = Object.keys(GrpcStatus);

/** A call's failure: the status and its message (sent percent-encoded in `grpc-message`). */
export class GrpcError extends Error {
  constructor(
    readonly code: GrpcStatusCode,
    readonly details: string,
  ) {
    super(details);
    this.name = "GrpcError";
  }
}

export interface UnaryCall {
  /** The request headers: the call's metadata (`authorization`, `x-sluice-token`, `x-request-id`…). */
  headers: http2.IncomingHttpHeaders;
  /** The request message's bytes (after the 5-byte header). */
  message: Buffer;
}

export interface UnaryAnswer {
  /** The response message, already framed (5-byte header first): one buffer, one write. */
  framed: Buffer;
  /** Trailers to send beside `grpc-status: 0`. */
  trailers?: Record<string, string>;
}

/** Answers a call, or throws (rejects with) a GrpcError; anything else thrown is INTERNAL. */
export type UnaryHandler = (call: UnaryCall) => UnaryAnswer | Promise<UnaryAnswer>;

export interface UnaryGrpcServerOptions {
  /** Handlers by path: `/<package>.<Service>/<Method>`. */
  methods: ReadonlyMap<string, UnaryHandler>;
  maxMessageBytes: number;
  /** How long draining waits for calls in flight before it cuts the connections (ms). */
  drainMs: number;
  logger: Logger;
}

export interface UnaryGrpcServer {
  server: http2.Http2Server;
  /** Binds `host:port` (0: a free port) and resolves to the port bound. */
  listen(port: number, host: string): Promise<number>;
  /** GOAWAY to every connection; resolves when they have all closed (at most drainMs). */
  drain(): Promise<void>;
}

const RESPONSE_HEADERS = Object.freeze({ ":status": 200, "content-type": "application/grpc" });
const OK_TRAILERS = Object.freeze({ "grpc-status": "0" });
const TIMEOUT_UNITS_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 0.001, n: 0.000_001 };
const TIMEOUT = /^(\d{1,8})([HMSmun])$/;

/** `grpc-message` is percent-encoded UTF-8: every byte outside printable ASCII, and `%`. */
export function encodeGrpcMessage(text: string): string {
  let plain = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return text;
  let out = "";
  for (const b of Buffer.from(text, "utf8")) out += b < 0x20 || b > 0x7e || b === 0x25 ? `%${b.toString(16).toUpperCase().padStart(2, "0")}` : String.fromCharCode(b);
  return out;
}

/** A status without a message: HTTP 200, grpc-status and grpc-message in the only HEADERS frame. */
function respondStatus(stream: http2.ServerHttp2Stream, code: GrpcStatusCode, details: string): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": String(code), "grpc-message": encodeGrpcMessage(details) }, { endStream: true });
  // Whatever the client still sends is not read: end the stream for it too.
  if (!stream.readableEnded) stream.close(http2.constants.NGHTTP2_NO_ERROR);
}

function respondMessage(stream: http2.ServerHttp2Stream, answer: UnaryAnswer): void {
  if (stream.destroyed || stream.closed) return;
  stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
  const trailers = answer.trailers ? { ...OK_TRAILERS, ...answer.trailers } : OK_TRAILERS;
  stream.once("wantTrailers", () => stream.sendTrailers(trailers));
  stream.end(answer.framed);
}

/** The call's deadline (performance.now() time), Infinity without one; null for a malformed header. */
function deadlineOf(header: string | string[] | undefined, nowMs: number): number | null {
  if (header === undefined) return Infinity;
  const m = TIMEOUT.exec(String(header).trim());
  if (!m) return null;
  return nowMs + Number(m[1]) * TIMEOUT_UNITS_MS[m[2]!]!;
}

export function createUnaryGrpcServer(options: UnaryGrpcServerOptions): UnaryGrpcServer {
  const { methods, maxMessageBytes, logger } = options;
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    // A connection's errors (a reset socket) end its streams; nothing to answer.
    session.on("error", () => undefined);
  });

  async function run(stream: http2.ServerHttp2Stream, handler: UnaryHandler, call: UnaryCall, deadlineMs: number): Promise<void> {
    let answer: UnaryAnswer;
    try {
      answer = await handler(call);
    } catch (error) {
      if (error instanceof GrpcError) respondStatus(stream, error.code, error.details);
      else {
        logger.error({ path: call.headers[":path"], err: errorMessage(error) }, "internal error in a gRPC handler");
        respondStatus(stream, GrpcStatus.INTERNAL, "internal error");
      }
      return;
    }
    if (performance.now() > deadlineMs) respondStatus(stream, GrpcStatus.DEADLINE_EXCEEDED, "Deadline exceeded");
    else respondMessage(stream, answer);
  }

  server.on("stream", (stream, headers) => {
    // A stream's errors (the client reset it) mean nobody is listening any more.
    stream.on("error", () => undefined);
    const contentType = headers["content-type"];
    if (typeof contentType !== "string" || !contentType.startsWith("application/grpc")) {
      stream.respond({ ":status": 415 }, { endStream: true });
      return;
    }
    const path = headers[":path"] ?? "";
    const handler = methods.get(path);
    if (!handler || headers[":method"] !== "POST") {
      respondStatus(stream, GrpcStatus.UNIMPLEMENTED, `The server does not implement the method ${path}`);
      return;
    }
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") {
      respondStatus(stream, GrpcStatus.UNIMPLEMENTED, `Received message compressed with unsupported encoding "${String(encoding)}"`);
      return;
    }
    const deadlineMs = deadlineOf(headers["grpc-timeout"], performance.now());
    if (deadlineMs === null) {
      respondStatus(stream, GrpcStatus.INTERNAL, `Invalid grpc-timeout value "${String(headers["grpc-timeout"])}"`);
      return;
    }

    // One message: its 5-byte header (compressed flag, big-endian length), then its bytes. Most
    // arrive in one DATA frame; the rest is gathered.
    let received: Buffer | null = null;
    let refused = false;
    let message: Buffer | null = null;
    const refuse = (code: GrpcStatusCode, details: string) => {
      refused = true;
      respondStatus(stream, code, details);
    };
    stream.on("data", (chunk: Buffer) => {
      if (refused) return;
      received = received === null ? chunk : Buffer.concat([received, chunk]);
      if (received.length < 5) return;
      if (message !== null) return refuse(GrpcStatus.UNIMPLEMENTED, `Received a second request message for unary method ${path}`);
      if (received[0] !== 0) return refuse(GrpcStatus.UNIMPLEMENTED, "Received a compressed message: only identity encoding is supported");
      const length = received.readUInt32BE(1);
      if (length > maxMessageBytes) return refuse(GrpcStatus.RESOURCE_EXHAUSTED, `Received message larger than max (${length} vs. ${maxMessageBytes})`);
      if (received.length < 5 + length) return;
      message = received.subarray(5, 5 + length);
      received = received.length === 5 + length ? null : received.subarray(5 + length);
      if (received !== null && received.length >= 5) refuse(GrpcStatus.UNIMPLEMENTED, `Received a second request message for unary method ${path}`);
    });
    stream.on("end", () => {
      if (refused) return;
      if (message === null || received !== null) {
        respondStatus(stream, GrpcStatus.UNIMPLEMENTED, received === null ? `Received no request message for unary method ${path}` : "Received a truncated request message");
        return;
      }
      void run(stream, handler, { headers, message }, deadlineMs);
    });
  });

  return {
    server,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          const address = server.address();
          resolve(typeof address === "object" && address ? address.port : port);
        });
      });
    },
    drain() {
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          for (const session of sessions) session.destroy();
        }, options.drainMs);
        timer.unref();
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        // GOAWAY: no new calls on these connections; the ones in flight finish.
        for (const session of sessions) session.close();
      });
    },
  };
}
