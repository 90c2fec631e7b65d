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
 * - a request that is not gRPC is refused from its headers: HTTP 415 unless the content-type is
 *   exactly `application/grpc` or `application/grpc+proto` (`application/grpcfoo` is not), and
 *   INTERNAL without `te: trailers`; an unknown path is UNIMPLEMENTED;
 * - draining: GOAWAY to every connection, calls in flight finish, then the connections close (cut
 *   after `drainMs`).
 *
 * Hostile clients (docs/security.md): `admit` judges a call from its headers (the service token)
 * before one byte of its message is read, so a refused call buffers nothing; the streams, bytes
 * and time a connection may hold are bounded (lib/net/grpc-limits.ts); a message is gathered with each
 * byte copied at most once (grpc-message.ts); a call the client reset before its message ended is
 * never handed to its handler, so it is not decided.
 *
 * It replaced @grpc/grpc-js on the serving side, whose per-call machinery (interceptors, metadata
 * objects, per-call timers, stream wrappers, protobufjs conversions) cost more CPU than the whole
 * HTTP decision path (docs/benchmarks.md); the integration tests speak to it with grpc-js.
 */
import http2 from "node:http2";
import { performance } from "node:perf_hooks";
import type { Logger } from "../../lib/log";
import { errorMessage } from "../../lib/log";
import { DEFAULT_GRPC_LIMITS, GrpcSweeper, type GrpcLimits, type TimedCall, type TimedSession } from "../../lib/net/grpc-limits";
import { MessageGather, type MessageGatherOptions } from "./grpc-message";
import { deadlineOf, encodeGrpcMessage, isGrpcProto } from "./grpc-headers";
import { GrpcError, GrpcStatus, type GrpcStatusCode } from "./grpc-status";

export { GRPC_STATUS_NAMES, GrpcError, GrpcStatus, type GrpcStatusCode } from "./grpc-status";
export { encodeGrpcMessage } from "./grpc-headers";
export { DEFAULT_GRPC_LIMITS, type GrpcLimits } from "../../lib/net/grpc-limits";

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
  /**
   * Judges a call from its headers alone, before its message is read: a GrpcError refuses it (and
   * nothing of its message is buffered), undefined lets it in. Unset: every call is let in.
   */
  admit?: (path: string, headers: http2.IncomingHttpHeaders) => GrpcError | undefined;
  /** Streams, bytes and time one connection may hold (DEFAULT_GRPC_LIMITS when unset). */
  limits?: GrpcLimits;
  /** How long draining waits for calls in flight before it cuts the connections (ms). */
  drainMs: number;
  logger: Logger;
  /**
   * Called once the calls that became whole in one event-loop turn were all started, their
   * handlers run up to their first wait: the decision server sends their store call from there
   * (CounterStore.flush), in this check phase rather than the next loop iteration's.
   */
  afterStart?: () => void;
}

export interface UnaryGrpcServer {
  server: http2.Http2Server;
  /** Binds `host:port` (0: a free port) and resolves to the port bound. */
  listen(port: number, host: string): Promise<number>;
  /** GOAWAY to every connection; resolves when they have all closed (at most drainMs). */
  drain(): Promise<void>;
}

const RESPONSE_HEADERS = Object.freeze({ ":status": 200, "content-type": "application/grpc" });
/** One options object for every answer: node:http2 copies it. */
const WAIT_FOR_TRAILERS = Object.freeze({ waitForTrailers: true });
const OK_TRAILERS = Object.freeze({ "grpc-status": "0" });
/** The IncomingCall of an admitted stream, so its listeners can be shared functions (below). */
const CALL = Symbol("sluice.grpcCall");
type CallStream = http2.ServerHttp2Stream & { [CALL]?: IncomingCallLike };
const EMPTY_MESSAGE = Buffer.alloc(0);

/** A connection's books (SessionState, below), on the session itself: no lookup per stream. */
const SESSION = Symbol("sluice.grpcSession");
type BookedSession = http2.ServerHttp2Session & { [SESSION]?: SessionState };

/**
 * The trailers of an answer with trailers of its handler's (`server-timing`): those change with
 * every call, so they are sent as literals HPACK never indexes (http2.sensitiveHeaders), rather
 * than each added to the connection's header table, evicting what it holds (#27).
 */
function answerTrailers(extra: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  const trailers: Record<string, string> & { [http2.sensitiveHeaders]?: string[] } = { ...OK_TRAILERS, ...extra };
  trailers[http2.sensitiveHeaders] = Object.keys(extra);
  return trailers;
}

/** What the shared stream listeners need of a call (IncomingCall, below). */
interface IncomingCallLike {
  trailers: Readonly<Record<string, string>>;
  onData(chunk: Buffer): void;
  onEnd(): void;
  onClose(): void;
}

/** A status without a message: HTTP 200, grpc-status and grpc-message in the only HEADERS frame. */
function respondStatus(stream: http2.ServerHttp2Stream, code: GrpcStatusCode, details: string): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": String(code), "grpc-message": encodeGrpcMessage(details) }, { endStream: true });
  // Whatever the client still sends is not read: end the stream for it too.
  if (!stream.readableEnded) stream.close(http2.constants.NGHTTP2_NO_ERROR);
}

/*
 * The listeners of an admitted call's stream: the same functions for every stream (the stream is
 * `this`, its call at stream[CALL]), so a call costs no closures and no `once` wrappers (it was 7
 * and 3). With them and the handler's async layers gone, this transport with a fixed answer went
 * from about 67 to 55 µs of CPU per call under h2load on a loaded machine, bench/h2-hello.ts 38 (#27).
 */
/** A stream's errors (the client reset it) mean nobody is listening any more. */
function ignoreError(): void {}
function onCallData(this: CallStream, chunk: Buffer): void {
  this[CALL]?.onData(chunk);
}
function onCallEnd(this: CallStream): void {
  this[CALL]?.onEnd();
}
function onCallClose(this: CallStream): void {
  this[CALL]?.onClose();
}
function onWantTrailers(this: CallStream): void {
  this.sendTrailers(this[CALL]?.trailers ?? OK_TRAILERS);
}

/** A connection's share of the limits. */
interface SessionState extends TimedSession {
  /** Request bytes its unfinished calls announced (each message's length, reserved before it is read). */
  reservedBytes: number;
  openCalls: number;
}

export function createUnaryGrpcServer(options: UnaryGrpcServerOptions): UnaryGrpcServer {
  const { methods, maxMessageBytes, logger, admit } = options;
  const limits = options.limits ?? DEFAULT_GRPC_LIMITS;
  const server = http2.createServer({ settings: { maxConcurrentStreams: limits.maxStreams } });
  const sweeper = new GrpcSweeper(limits);
  const sessions = new Map<http2.ServerHttp2Session, SessionState>();
  server.on("session", (session) => {
    const state: SessionState = {
      reservedBytes: 0,
      openCalls: 0,
      idleSinceMs: performance.now(),
      // GOAWAY: a call that raced it is refused by the client's HTTP/2 layer, never lost silently.
      closeIdle: () => session.close(),
    };
    sessions.set(session, state);
    (session as BookedSession)[SESSION] = state;
    sweeper.addSession(state);
    session.once("close", () => {
      sessions.delete(session);
      sweeper.removeSession(state);
    });
    // A connection's errors (a reset socket) end its streams; nothing to answer.
    session.on("error", () => undefined);
  });

  /** A handler's answer, or why not: the call's only response. */
  function answered(call: IncomingCall, answer: UnaryAnswer): void {
    const { stream } = call;
    if (call.clientDeadlineMs !== Infinity && performance.now() > call.clientDeadlineMs) return respondStatus(stream, GrpcStatus.DEADLINE_EXCEEDED, "Deadline exceeded");
    if (stream.destroyed || stream.closed) return;
    stream.respond(RESPONSE_HEADERS, WAIT_FOR_TRAILERS);
    if (answer.trailers) call.trailers = answerTrailers(answer.trailers);
    stream.on("wantTrailers", onWantTrailers);
    stream.end(answer.framed);
  }

  function failed(call: IncomingCall, error: unknown): void {
    if (error instanceof GrpcError) return respondStatus(call.stream, error.code, error.details);
    logger.error({ path: call.headers[":path"], err: errorMessage(error) }, "internal error in a gRPC handler");
    respondStatus(call.stream, GrpcStatus.INTERNAL, "internal error");
  }

  /** Runs a call's handler: a synchronous answer is sent at once, a promised one when it settles. */
  function run(call: IncomingCall): void {
    let result: UnaryAnswer | Promise<UnaryAnswer>;
    try {
      result = call.handler(call);
    } catch (error) {
      return failed(call, error);
    }
    if (result instanceof Promise) {
      result.then(
        (answer) => answered(call, answer),
        (error: unknown) => failed(call, error),
      );
    } else answered(call, result);
  }

  /** What the headers alone refuse: a GrpcError, an HTTP status (not gRPC at all), or null. */
  function refusalOf(headers: http2.IncomingHttpHeaders, path: string): GrpcError | 415 | null {
    if (!isGrpcProto(headers["content-type"])) return 415;
    if (headers.te !== "trailers") return new GrpcError(GrpcStatus.INTERNAL, 'A gRPC request must carry "te: trailers"');
    if (!methods.has(path) || headers[":method"] !== "POST") return new GrpcError(GrpcStatus.UNIMPLEMENTED, `The server does not implement the method ${path}`);
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") {
      return new GrpcError(GrpcStatus.UNIMPLEMENTED, `Received message compressed with unsupported encoding "${String(encoding)}"`);
    }
    return admit?.(path, headers) ?? null;
  }

  /**
   * Calls whose message ended in this event-loop turn, started together in its check phase: after
   * everything the sockets held has been read, so a call the client reset (RST_STREAM) in the same
   * read is not handled, so not decided — nobody would read the answer, and a decision charges the
   * key. (node:http2 emits 'end' before it processes a RST_STREAM that follows in the same read.)
   * Their decisions still share one store call, sent at once by `afterStart`: the coalescer's own
   * flush, scheduled from this check phase, would wait for the next loop iteration (sending it
   * here cut the CPU per call under h2load, docs/benchmarks.md, #27). One setImmediate per turn,
   * not per call.
   */
  let ready: IncomingCall[] = [];
  function startReady(): void {
    const calls = ready;
    ready = [];
    for (const call of calls) {
      const { stream } = call;
      if (stream.destroyed || stream.closed || stream.aborted) continue;
      run(call);
    }
    options.afterStart?.();
  }

  /**
   * A call from its headers to its answer: its message gathered within the limits (it is the
   * gather's options and byte budget, so the gather allocates nothing else), timed by the sweep
   * until the message is whole, then handed to its handler as the UnaryCall itself.
   */
  class IncomingCall implements TimedCall, UnaryCall, IncomingCallLike, MessageGatherOptions {
    /** The server's call timeout (set by the sweeper). */
    deadlineMs = 0;
    /** The request message, once whole. */
    message: Buffer = EMPTY_MESSAGE;
    /** The answer's trailers (the handler's, beside grpc-status: 0). */
    trailers: Readonly<Record<string, string>> = OK_TRAILERS;
    readonly maxMessageBytes = maxMessageBytes;
    private done = false;
    private readonly gather: MessageGather;

    constructor(
      readonly stream: CallStream,
      readonly headers: http2.IncomingHttpHeaders,
      readonly handler: UnaryHandler,
      /** The client's own grpc-timeout deadline (performance.now() time, Infinity without one). */
      readonly clientDeadlineMs: number,
      private readonly session: SessionState | undefined,
      readonly path: string,
    ) {
      this.gather = new MessageGather(this);
      sweeper.addCall(this);
      stream[CALL] = this;
      stream.on("data", onCallData);
      stream.on("end", onCallEnd);
    }

    expire(): void {
      this.finish(new GrpcError(GrpcStatus.DEADLINE_EXCEEDED, `Call not completed within the server's call timeout (${limits.callTimeoutMs} ms)`));
    }

    /** The call leaves the limits' books: refused (with `error`), complete, or gone. */
    finish(error?: GrpcError): void {
      if (this.done) return;
      this.done = true;
      sweeper.removeCall(this);
      if (this.session) this.session.reservedBytes -= this.gather.reservedBytes;
      // A whole message's stream sends no more data; a refused one's is dropped, not gathered.
      if (error) {
        this.stream.off("data", onCallData);
        respondStatus(this.stream, error.code, error.details);
      }
    }

    reserve(bytes: number): boolean {
      const { session } = this;
      if (!session) return true;
      if (session.reservedBytes + bytes > limits.maxSessionBytes) return false;
      session.reservedBytes += bytes;
      return true;
    }

    onData(chunk: Buffer): void {
      if (this.done) return;
      try {
        this.gather.push(chunk);
      } catch (error) {
        this.finish(error instanceof GrpcError ? error : new GrpcError(GrpcStatus.INTERNAL, "internal error"));
      }
    }

    onEnd(): void {
      if (this.done) return;
      try {
        this.message = this.gather.finish();
      } catch (error) {
        return this.finish(error instanceof GrpcError ? error : new GrpcError(GrpcStatus.INTERNAL, "internal error"));
      }
      this.finish();
      if (ready.length === 0) setImmediate(startReady);
      ready.push(this);
    }

    onClose(): void {
      this.finish();
      const { session } = this;
      if (session && --session.openCalls === 0) session.idleSinceMs = performance.now();
    }
  }

  server.on("stream", (stream: CallStream, headers) => {
    stream.on("error", ignoreError);
    const session = (stream.session as BookedSession | undefined)?.[SESSION];
    if (session) {
      session.openCalls++;
      session.idleSinceMs = null;
    }
    const path = headers[":path"] ?? "";
    const refusal = refusalOf(headers, path);
    const deadlineMs = refusal === null ? deadlineOf(headers["grpc-timeout"]) : null;
    if (refusal === null && deadlineMs !== null) {
      stream.on("close", onCallClose);
      new IncomingCall(stream, headers, methods.get(path)!, deadlineMs, session, path);
      return;
    }
    // Refused from its headers: no call, only the connection's books.
    stream.once("close", () => {
      if (session && --session.openCalls === 0) session.idleSinceMs = performance.now();
    });
    if (refusal === 415) {
      stream.respond({ ":status": 415 }, { endStream: true });
      if (!stream.readableEnded) stream.close(http2.constants.NGHTTP2_NO_ERROR);
      return;
    }
    if (refusal) return respondStatus(stream, refusal.code, refusal.details);
    respondStatus(stream, GrpcStatus.INTERNAL, `Invalid grpc-timeout value "${String(headers["grpc-timeout"])}"`);
  });

  return {
    server,
    listen(port, host) {
      sweeper.start();
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
          for (const session of sessions.keys()) session.destroy();
        }, options.drainMs);
        timer.unref();
        server.close(() => {
          clearTimeout(timer);
          sweeper.stop();
          resolve();
        });
        // GOAWAY: no new calls on these connections; the ones in flight finish.
        for (const session of sessions.keys()) session.close();
      });
    },
  };
}
