/**
 * The decision server's HTTP/1.1 server on node:http (`SLUICE_HTTP_SERVER=node`), behind the
 * interface of ./http-server.ts with the same limits and answers as ./http1.ts. node:http does the
 * parsing, framing, keep-alive, pipelining and timeouts; this adapter adds what the interface
 * promises on top: a request seen from its head (route), a bounded whole body, a 431 past
 * `maxHeaders` lines (node would drop them), the refusals worded by the caller, one answer per
 * request, at most `maxPipelined` requests started per connection (node parses a whole read of
 * pipelined requests at once), and drain. Where node:http's timers differ: docs/decision-api.md#http.
 */
import http, { STATUS_CODES, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { checkHeaderValue, CLIENT_ERROR_STATUS, headerLines, httpLimits, MAX_UNSENT_BYTES, pathOf, routeRequest, runHandler, sendClientError, waitForDrain } from "./http-server";
import type { HttpClientError, HttpExchange, HttpServer, HttpServerOptions } from "./http-server";

const EMPTY = Buffer.alloc(0);

/** What this adapter tracks of one socket. */
interface SocketState {
  readonly socket: Socket;
  /** Requests read whose answer is not written yet: the ones started (routed), at most maxPipelined, and the waiting ones. */
  pending: number;
  /** Requests read and not started yet, in order: node:http parses a whole read of pipelined requests at once. */
  readonly waiting: (() => void)[];
  /** The request read last (a parse error is in its body while it is not complete). */
  latest: NodeExchange | null;
  /** This socket's input was refused: further parse errors are ignored. */
  refused: boolean;
  /** A refusal waiting for the answers owed before it (pipelined requests keep their order). */
  refusal: string | null;
}

class NodeExchange implements HttpExchange {
  body: Buffer = EMPTY;
  readonly method: string;
  readonly url: string;
  readonly path: string;
  /** The answer ends the connection whatever the caller says (a body too large to skip). */
  closeAfter = false;
  private sent = false;

  constructor(
    readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly draining: () => boolean,
  ) {
    this.method = req.method ?? "GET";
    this.url = req.url ?? "/";
    this.path = pathOf(this.url);
  }

  header(name: string): string | undefined {
    const value = this.req.headers[name];
    return Array.isArray(value) ? value.join(", ") : value;
  }

  get answered(): boolean {
    return this.sent || this.res.destroyed;
  }

  send(status: number, headers: readonly string[], body: string, close = false): void {
    if (this.answered) return;
    for (let i = 0; i < headers.length; i += 2) checkHeaderValue(headers[i]!, headers[i + 1]!);
    this.write(status, [...headers], body, close);
  }

  sendLines(status: number, lines: string, body: string, close = false): void {
    if (this.answered) return;
    const headers: string[] = [];
    for (const line of lines.split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon > 0) headers.push(line.slice(0, colon), line.slice(colon + 1).trim());
    }
    this.write(status, headers, body, close);
  }

  private write(status: number, headers: string[], body: string, close: boolean): void {
    this.sent = true;
    headers.push("Content-Length", String(Buffer.byteLength(body)));
    if (close || this.closeAfter || this.draining()) headers.push("Connection", "close");
    this.res.writeHead(status, headers);
    this.res.end(this.method === "HEAD" ? undefined : body);
  }
}

/** Creates the server (call `server.listen`). */
export function createNodeHttpServer(options: HttpServerOptions): HttpServer {
  const limits = httpLimits(options);
  const server = http.createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // node's default checks every 30 s; the timeouts are meant to the second, as http1.ts's sweep.
    connectionsCheckingInterval: Math.min(1_000, Math.max(10, Math.floor(limits.headersTimeoutMs / 4))),
    noDelay: true,
    // Checked below instead, so that the 400 is worded by the caller like every other refusal.
    requireHostHeader: false,
  });
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // One more than allowed, so that too many can be told from exactly enough (node drops the rest).
  server.maxHeadersCount = limits.maxHeaders + 1;
  const sockets = new Map<Socket, SocketState>();
  let inFlight = 0;
  let draining = false;
  let onIdle: (() => void) | null = null;
  const isDraining = () => draining;

  server.on("connection", (socket: Socket) => {
    const state: SocketState = { socket, pending: 0, waiting: [], latest: null, refused: false, refusal: null };
    sockets.set(socket, state);
    socket.on("drain", () => startWaiting(state));
    socket.on("close", () => {
      sockets.delete(socket);
      onIdle?.();
    });
  });

  /**
   * Starts the requests waiting on a socket while fewer than maxPipelined are unanswered and its
   * client reads what it is sent: a client that pipelines and stops reading holds a bounded backlog.
   */
  function startWaiting(state: SocketState): void {
    while (state.waiting.length > 0 && state.pending - state.waiting.length < limits.maxPipelined && state.socket.writableLength <= MAX_UNSENT_BYTES) state.waiting.shift()!();
  }

  function onRequest(req: IncomingMessage, res: ServerResponse, expect: "continue" | "other" | null): void {
    const state = sockets.get(req.socket);
    if (state === undefined) return void res.destroy();
    const exchange = new NodeExchange(req, res, isDraining);
    inFlight++;
    state.pending++;
    state.latest = exchange;
    let started = false;
    const start = () => {
      started = true;
      if (!exchange.answered) begin(exchange, req, res, expect);
    };
    res.once("close", () => {
      inFlight--;
      state.pending--;
      if (!started) state.waiting.splice(state.waiting.indexOf(start), 1);
      if (state.pending === 0 && state.refusal !== null) state.socket.end(state.refusal);
      else startWaiting(state);
      onIdle?.();
    });
    state.waiting.push(start);
    startWaiting(state);
  }

  /** A request's head was read and its turn came: route it, then read its body for its handler (or skip it). */
  function begin(exchange: NodeExchange, req: IncomingMessage, res: ServerResponse, expect: "continue" | "other" | null): void {
    const length = Number(req.headers["content-length"] ?? 0);
    // A declared body over the limit is never read: whatever answers it, the connection ends.
    exchange.closeAfter = length > limits.maxBodyBytes;
    if (req.rawHeaders.length > 2 * limits.maxHeaders) return sendClientError(options, exchange, "headers_too_large");
    if (req.httpVersion === "1.1" && req.headers.host === undefined) return sendClientError(options, exchange, "malformed");
    if (expect === "other") return sendClientError(options, exchange, "expectation_failed");
    const handler = routeRequest(options, exchange);
    let bytes = 0;
    if (handler === null) {
      // Answered from its head: the body is read and dropped, up to the limit.
      req.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > limits.maxBodyBytes) req.socket.destroy();
      });
      return;
    }
    if (exchange.closeAfter) return sendClientError(options, exchange, "body_too_large");
    if (expect === "continue") res.writeContinue();
    const parts: Buffer[] = [];
    req.on("data", (chunk: Buffer) => {
      if (exchange.answered) return;
      bytes += chunk.length;
      if (bytes > limits.maxBodyBytes) sendClientError(options, exchange, "body_too_large");
      else parts.push(chunk);
    });
    req.on("end", () => {
      if (exchange.answered) return;
      exchange.body = parts.length === 1 ? parts[0]! : Buffer.concat(parts, bytes);
      runHandler(options, handler, exchange);
    });
  }

  server.on("request", (req: IncomingMessage, res: ServerResponse) => onRequest(req, res, null));
  server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => onRequest(req, res, "continue"));
  server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => onRequest(req, res, "other"));

  // node:http could not parse what came, or it came too slowly: one refusal, worded by the caller.
  // In the body of the request read last, the refusal is that request's answer (none if it was
  // answered from its head already); in a new head, it follows the answers owed before it.
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    const state = sockets.get(socket);
    if (state === undefined || state.refused || !socket.writable || error.code === "ECONNRESET") return void socket.destroy();
    state.refused = true;
    const kind: HttpClientError = error.code === "HPE_HEADER_OVERFLOW" ? "headers_too_large" : error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? "timeout" : "malformed";
    const latest = state.latest;
    if (latest !== null && !latest.req.complete) {
      if (latest.answered) socket.destroy();
      else sendClientError(options, latest, kind);
      return;
    }
    const status = CLIENT_ERROR_STATUS[kind];
    const answer = options.clientError(kind);
    const head = `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nDate: ${new Date().toUTCString()}\r\n${headerLines(answer.headers)}Connection: close\r\n`;
    const refusal = `${head}Content-Length: ${Buffer.byteLength(answer.body)}\r\n\r\n${answer.body}`;
    if (state.pending > 0) state.refusal = refusal;
    else socket.end(refusal);
  });

  /** Closes the connections owed no answer (node:http's closeIdleConnections misses those that never sent a request): how many are left. */
  function closeIdle(): number {
    for (const state of sockets.values()) if (state.pending === 0 && state.socket.writableLength === 0) state.socket.destroy();
    return sockets.size;
  }

  async function drain(graceMs = 10_000): Promise<void> {
    draining = true;
    server.close();
    closeIdle();
    await waitForDrain(graceMs, () => inFlight === 0 && closeIdle() === 0, (onChange) => (onIdle = onChange));
    for (const socket of sockets.keys()) socket.destroy();
  }

  return { server, kind: "node", inFlight: () => inFlight, drain };
}
