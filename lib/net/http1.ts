/**
 * A small, strict HTTP/1.1 server on node:net: what the decision server speaks (docs/decision-api.md).
 *
 * Why not node:http: on the decision path a request is a few hundred bytes in and out, and
 * node:http's per-request machinery (IncomingMessage and ServerResponse streams, events, header
 * objects) cost about as much CPU as the whole decision (bench: node:http hello ≈ 20 µs of server
 * CPU per request, a plain socket answering the same bytes ≈ 11 µs). This layer parses a request
 * into one object, hands the handler the whole body (bounded), and writes the answer as one string
 * in one write; everything node:http does for a server like this one it does too:
 *
 * - framing: Content-Length or chunked bodies (trailers read and ignored), never both (400, the
 *   request-smuggling rule); keep-alive (HTTP/1.1 by default, HTTP/1.0 when asked), `Connection:
 *   close`; pipelined requests answered in order (at most MAX_PIPELINED in flight per connection);
 *   `Expect: 100-continue` answered `100 Continue` (any other expectation: 417); HEAD answers carry
 *   no body; HTTP/1.1 without Host is 400 (as node's requireHostHeader);
 * - limits: a head over `maxHeaderBytes` (16 KiB, node's default) is 431; headers past
 *   `maxHeaders` (100) are dropped, as node's maxHeadersCount; a body over `maxBodyBytes` is 413
 *   without reading it, and the connection is closed;
 * - strictness: a request line or header that is not RFC 9112 (bare CR or LF, obs-fold, a space
 *   before the colon, a control character, a bad Content-Length or chunk size) is 400 and closes the
 *   connection: never guessed at;
 * - timeouts, judged by one timer per server every second (node's own check runs every 30 s): a head
 *   not complete within `headersTimeoutMs` (5 s) or a request within `requestTimeoutMs` (10 s) of its
 *   first byte is 408 and closed; a connection idle for `keepAliveTimeoutMs` (5 s) is closed;
 * - backpressure: a client that does not read its answers stops being read;
 * - drain: stop accepting, close idle connections, let requests in flight finish (their answers say
 *   `Connection: close`), then close what is left after the grace period.
 *
 * What it does not do: upgrades (WebSocket, h2c), trailers for the handler, absolute-form targets
 * (they are passed as sent), compression. The decision server needs none of them.
 */
import { STATUS_CODES } from "node:http";
import net from "node:net";

export interface Http1Limits {
  /** The request line and headers together, in bytes (431 past it). */
  maxHeaderBytes: number;
  /** Header lines kept; later ones are dropped (as node's maxHeadersCount). */
  maxHeaders: number;
  /** A request body, in bytes (413 past it). */
  maxBodyBytes: number;
  /** From a request's first byte to the end of its head (408 past it). */
  headersTimeoutMs: number;
  /** From a request's first byte to the end of its body (408 past it). */
  requestTimeoutMs: number;
  /** How long a connection may sit idle between requests. */
  keepAliveTimeoutMs: number;
}

export const DEFAULT_HTTP1_LIMITS: Http1Limits = {
  maxHeaderBytes: 16 * 1024,
  maxHeaders: 100,
  maxBodyBytes: 64 * 1024,
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
};

/** Why this layer refused a request itself (the caller words the answer, the status is fixed). */
export type Http1ClientError = "malformed" | "headers_too_large" | "body_too_large" | "timeout" | "expectation_failed";

const CLIENT_ERROR_STATUS: Record<Http1ClientError, number> = {
  malformed: 400,
  headers_too_large: 431,
  body_too_large: 413,
  timeout: 408,
  expectation_failed: 417,
};

/** An answer: status, a flat [name, value, …] header list (no Content-Length: it is added), a body. */
export interface Http1Answer {
  status: number;
  headers: readonly string[];
  body: string;
}

/** The handler of a request whose whole body has been read. */
export type Http1Handler = (exchange: Http1Exchange) => void | Promise<void>;

export interface Http1Options extends Partial<Http1Limits> {
  /**
   * Called once a request's head is read, before its body: returns the handler that gets the
   * request with its whole body, or answers at once (exchange.send) and returns null; the body is
   * then skipped (a 404, a 405, a missing credential never makes the server buffer a body).
   */
  route(exchange: Http1Exchange): Http1Handler | null;
  /** The body and headers of an answer this layer gives itself (the status is the kind's). */
  clientError(kind: Http1ClientError): Omit<Http1Answer, "status">;
  /** A handler threw or rejected: answer it (if it was not answered yet) and report it. */
  handlerError(exchange: Http1Exchange, error: unknown): void;
}

/** Headers whose later copies node:http drops instead of joining (IncomingMessage.headers). */
const SINGLE_VALUED = new Set([
  "age", "authorization", "content-length", "content-type", "etag", "expires", "from", "host", "if-modified-since",
  "if-unmodified-since", "last-modified", "location", "max-forwards", "proxy-authorization", "referer", "retry-after",
  "server", "user-agent",
]);

// RFC 9112 §3 and RFC 9110 §5: token characters, visible characters and obs-text.
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) ([\x21-\x7e\x80-\xff]+) HTTP\/1\.([01])$/;
const FIELD_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[\t ]*((?:[\x21-\x7e\x80-\xff](?:[\t \x21-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?)?)[\t ]*$/;
const DIGITS = /^[0-9]{1,15}$/;
const CHUNK_SIZE_LINE = /^([0-9A-Fa-f]{1,8})(?:[\t ]*;[\t \x21-\x7e\x80-\xff]*)?$/;
/** A header value this layer writes: no control characters but tab (no response splitting). */
const UNSAFE_VALUE = /[\0-\x08\x0a-\x1f\x7f]/;

const CRLF = Buffer.from("\r\n");
const CRLFCRLF = Buffer.from("\r\n\r\n");
const EMPTY = Buffer.alloc(0);
const CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n";
/** Requests of one connection answered or in flight before it is read further. */
const MAX_PIPELINED = 16;
/** Written but unsent bytes of one connection before it is read further. */
const MAX_UNSENT_BYTES = 256 * 1024;
const MAX_CHUNK_LINE = 1024;

/** The parts of a request head (pure, for tests too). */
export interface Http1Head {
  method: string;
  url: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minor: number;
  /** [lower-case name, value, …] in the order sent (values without surrounding whitespace). */
  headers: string[];
}

/** Character classes of RFC 9110 §5.6.2 and §5.5 by char code (latin1): 1 tchar, 2 field-vchar (VCHAR, obs-text), 4 SP or HTAB. */
const CHAR_CLASS = new Uint8Array(256);
for (let c = 0; c < 256; c++) {
  const ch = String.fromCharCode(c);
  if (/[!#$%&'*+.^_`|~0-9A-Za-z-]/.test(ch)) CHAR_CLASS[c]! |= 1;
  if ((c >= 0x21 && c <= 0x7e) || c >= 0x80) CHAR_CLASS[c]! |= 2;
  if (c === 0x20 || c === 0x09) CHAR_CLASS[c]! |= 4;
}
/** Lower-case names of the headers requests usually carry, by the spellings clients send (no toLowerCase per request). */
const KNOWN_NAMES = new Map<string, string>();
for (const name of ["Host", "Content-Type", "Content-Length", "Authorization", "Accept", "User-Agent", "Connection", "Accept-Encoding", "Transfer-Encoding", "Expect", "X-Forwarded-For", "X-Real-IP", "X-Request-Id", "X-Api-Key", "X-Sluice-Token", "X-Forwarded-Method", "X-Forwarded-Uri", "X-Original-Method", "X-Original-URI", "Keep-Alive"]) {
  KNOWN_NAMES.set(name, name.toLowerCase());
  KNOWN_NAMES.set(name.toLowerCase(), name.toLowerCase());
}

/**
 * Parses a request head (the text before the empty line, latin1-decoded); null when it is not RFC
 * 9112: a request line `method SP target SP HTTP/1.x`, then field lines `name: value` with a token
 * name, no space before the colon, and a value of visible characters, obs-text, spaces and tabs
 * (trimmed of spaces and tabs at both ends). A bare CR or LF, an obs-fold or a control character
 * anywhere makes it null. Field lines are scanned character by character against CHAR_CLASS
 * rather than matched with a regular expression: this runs once per request.
 */
export function parseHead(text: string, maxHeaders = DEFAULT_HTTP1_LIMITS.maxHeaders): Http1Head | null {
  let end = text.indexOf("\r\n");
  if (end === -1) end = text.length;
  const line = REQUEST_LINE.exec(text.slice(0, end));
  if (line === null) return null;
  const headers: string[] = [];
  const n = text.length;
  let at = end + 2;
  while (at < n + 2 && end < n) {
    end = text.indexOf("\r\n", at);
    if (end === -1) end = n;
    // name: one or more tchar up to the colon
    let i = at;
    while (i < end && (CHAR_CLASS[text.charCodeAt(i)]! & 1) !== 0) i++;
    if (i === at || i === end || text.charCodeAt(i) !== 58) return null;
    const nameEnd = i;
    // value: field-vchar, SP and HTAB only; leading and trailing SP/HTAB are not part of it
    i++;
    while (i < end && (CHAR_CLASS[text.charCodeAt(i)]! & 4) !== 0) i++;
    const valueStart = i;
    let valueEnd = i;
    for (; i < end; i++) {
      const cls = CHAR_CLASS[text.charCodeAt(i)]!;
      if ((cls & 2) !== 0) valueEnd = i + 1;
      else if ((cls & 4) === 0) return null;
    }
    if (headers.length < 2 * maxHeaders) {
      const raw = text.slice(at, nameEnd);
      headers.push(KNOWN_NAMES.get(raw) ?? raw.toLowerCase(), text.slice(valueStart, valueEnd));
    }
    at = end + 2;
  }
  return { method: line[1]!, url: line[2]!, minor: line[3] === "1" ? 1 : 0, headers };
}

/** A header's value as node:http's IncomingMessage.headers gives it: repeats joined by ", ", or the first for single-valued names. */
export function headerValue(headers: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] !== name) continue;
    if (value === undefined) value = headers[i + 1]!;
    else if (SINGLE_VALUED.has(name)) return value;
    else value += `, ${headers[i + 1]!}`;
  }
  return value;
}

/** Whether a comma-separated header (Connection, Transfer-Encoding) lists this token, any case. */
function hasToken(value: string | undefined, token: string): boolean {
  if (value === undefined) return false;
  for (const part of value.split(",")) if (part.trim().toLowerCase() === token) return true;
  return false;
}

/** `Date: …\r\n` of the answers, renewed every second by the servers' sweep. */
let dateLine = `Date: ${new Date().toUTCString()}\r\n`;
/** `HTTP/1.1 <status> <reason>\r\n` by status (a few distinct ones). */
const statusLines = new Map<number, string>();
function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (line === undefined) statusLines.set(status, (line = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Unknown"}\r\n`));
  return line;
}
/** Seconds since the module loaded, advanced by the servers' sweep: the coarse clock of the timeouts. */
let clockS = 0;

/** One request and its answer. */
export class Http1Exchange {
  /** The whole body (set before the handler runs; empty until then). */
  body: Buffer = EMPTY;
  /** The answer bytes, once sent and until written (in request order). */
  out: string | null = null;
  /** This answer ends the connection. */
  closeAfter: boolean;
  /** The answer is ASCII (the head always is; the body may not be). */
  ascii = true;
  readonly path: string;

  constructor(
    private readonly conn: Connection,
    readonly method: string,
    /** The request target as sent (`/v1/check?x=1`). */
    readonly url: string,
    readonly minor: number,
    /** [lower-case name, value, …] as sent. */
    readonly headers: readonly string[],
    keepAlive: boolean,
  ) {
    const q = url.indexOf("?");
    this.path = q === -1 ? url : url.slice(0, q);
    this.closeAfter = !keepAlive;
  }

  /** A request header (lower-case name), as node:http's `req.headers[name]` gives it. */
  header(name: string): string | undefined {
    return headerValue(this.headers, name);
  }

  /** The client's address. */
  get remoteAddress(): string | undefined {
    return this.conn.socket.remoteAddress;
  }

  get answered(): boolean {
    return this.out !== null || this.done;
  }

  /** Written to the socket (or dropped: the connection is gone). */
  done = false;

  /**
   * Answers: `headers` is a flat [name, value, …] list; Content-Length, Date and the connection's
   * own headers are added. A second call is ignored. `close`: end the connection after it.
   */
  send(status: number, headers: readonly string[], body: string, close = false): void {
    let lines = "";
    for (let i = 0; i < headers.length; i += 2) {
      const value = headers[i + 1]!;
      if (UNSAFE_VALUE.test(value)) throw new Error(`header ${headers[i]!}: control character in its value`);
      lines += `${headers[i]!}: ${value}\r\n`;
    }
    this.sendLines(status, lines, body, close);
  }

  /**
   * send() with the header lines already written (`Name: value\r\n` each), for a caller that builds
   * them from constants and numbers only: nothing in them is checked (send checks every value).
   */
  sendLines(status: number, lines: string, body: string, close = false): void {
    if (this.out !== null || this.done) return;
    if (close) this.closeAfter = true;
    const conn = this.conn;
    if (conn.server.draining) this.closeAfter = true;
    let head = statusLine(status) + dateLine + lines;
    head += this.closeAfter ? "Connection: close\r\n" : this.minor === 0 ? conn.server.keepAliveLines10 : conn.server.keepAliveLines11;
    const bytes = Buffer.byteLength(body);
    // HEAD: the length the body would have, and no body.
    this.out = this.method === "HEAD" ? `${head}Content-Length: ${bytes}\r\n\r\n` : `${head}Content-Length: ${bytes}\r\n\r\n${body}`;
    // An all-ASCII answer (the usual one) is written as latin1: the same bytes, copied instead of encoded.
    this.ascii = bytes === body.length;
    conn.answered(this);
  }
}

const enum Phase {
  Head,
  Body,
  ChunkSize,
  ChunkData,
  ChunkEnd,
  Trailers,
  /** Nothing more is read: the connection ends once its answers are written. */
  Closed,
}

interface ServerState {
  /** Connections with answers ready to write, written together at the end of this event-loop turn's I/O. */
  readonly toFlush: Connection[];
  flushScheduled: boolean;
  readonly limits: Http1Limits;
  readonly options: Http1Options;
  /** The keep-alive lines of an answer that keeps the connection (HTTP/1.1, and HTTP/1.0 which asked for it). */
  readonly keepAliveLines11: string;
  readonly keepAliveLines10: string;
  draining: boolean;
  readonly connections: Set<Connection>;
  inFlight: number;
  onIdle: (() => void) | null;
}

class Connection {
  /** Bytes read and not parsed yet. */
  private buf: Buffer | null = null;
  private phase = Phase.Head;
  /** The request whose body is being read, and its handler (null: the body is skipped). */
  private current: Http1Exchange | null = null;
  private handler: Http1Handler | null = null;
  /** Body bytes (or chunk bytes) still to read; trailer bytes read, in the Trailers phase. */
  private left = 0;
  private bodyParts: Buffer[] = [];
  private bodyBytes = 0;
  /** Answers in request order: the first is written as soon as it is sent. */
  private readonly queue: Http1Exchange[] = [];
  /** When the request being read started, or the connection went idle or ended (clockS). */
  private sinceS = clockS;
  private paused = false;
  /** Ended (or ending): answers sent now are dropped. */
  private dead = false;

  constructor(
    readonly socket: net.Socket,
    readonly server: ServerState,
  ) {
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("drain", () => this.resume());
    socket.on("error", () => socket.destroy());
    socket.on("close", () => this.onClose());
  }

  /** No request in progress and no answer owed. */
  get idle(): boolean {
    return this.queue.length === 0 && this.buf === null && this.phase === Phase.Head;
  }

  private onData(chunk: Buffer): void {
    if (this.phase === Phase.Closed) return;
    if (this.buf === null) {
      if (this.phase === Phase.Head) this.sinceS = clockS;
      this.buf = chunk;
    } else {
      this.buf = Buffer.concat([this.buf, chunk]);
    }
    this.parse();
  }

  /** Reads as many requests as the buffer holds (up to the pipelining bound); their answers are written at the end of the turn (answered). */
  private parse(): void {
    const buf = this.buf;
    if (buf === null) return;
    let at = 0;
    try {
      at = this.parseFrom(buf);
    } finally {
      this.buf = this.phase === Phase.Closed || at >= buf.length ? null : buf.subarray(at);
    }
  }

  /** The parse loop: returns where it stopped (a partial request, the pipelining bound, or the end). */
  private parseFrom(buf: Buffer): number {
    const limits = this.server.limits;
    let at = 0;
    while (at < buf.length && !this.paused) {
      switch (this.phase) {
        case Phase.Head: {
          // An empty line before a request line is ignored (RFC 9112 §2.2).
          while (at + 1 < buf.length && buf[at] === 13 && buf[at + 1] === 10) at += 2;
          if (at >= buf.length) return at;
          if (this.queue.length >= MAX_PIPELINED) {
            this.pause();
            return at;
          }
          const end = buf.indexOf(CRLFCRLF, at);
          if (end === -1) {
            if (buf.length - at > limits.maxHeaderBytes) return this.refuse("headers_too_large");
            // A request line that is already wrong is refused now, not when the head ends.
            const lineEnd = buf.indexOf(CRLF, at);
            if (lineEnd !== -1 && !REQUEST_LINE.test(buf.toString("latin1", at, lineEnd))) return this.refuse("malformed");
            return at;
          }
          if (end - at > limits.maxHeaderBytes) return this.refuse("headers_too_large");
          const head = parseHead(buf.toString("latin1", at, end), limits.maxHeaders);
          if (head === null) return this.refuse("malformed");
          at = end + 4;
          this.begin(head);
          break;
        }
        case Phase.Body: {
          const take = Math.min(this.left, buf.length - at);
          if (this.handler !== null) {
            // The usual case, the whole body in this buffer, is not copied.
            if (take === this.left && this.bodyParts.length === 0) this.current!.body = buf.subarray(at, at + take);
            else this.bodyParts.push(buf.subarray(at, at + take));
          }
          this.bodyBytes += take;
          at += take;
          this.left -= take;
          if (this.left === 0) this.complete();
          break;
        }
        case Phase.ChunkSize: {
          const end = buf.indexOf(CRLF, at);
          if (end === -1) {
            if (buf.length - at > MAX_CHUNK_LINE) return this.refuse("malformed");
            return at;
          }
          const line = CHUNK_SIZE_LINE.exec(buf.toString("latin1", at, end));
          if (line === null) return this.refuse("malformed");
          at = end + 2;
          const size = parseInt(line[1]!, 16);
          if (size === 0) {
            this.phase = Phase.Trailers;
            this.left = 0;
          } else if (this.bodyBytes + size > limits.maxBodyBytes) {
            return this.refuse("body_too_large");
          } else {
            this.left = size;
            this.phase = Phase.ChunkData;
          }
          break;
        }
        case Phase.ChunkData: {
          const take = Math.min(this.left, buf.length - at);
          if (this.handler !== null) this.bodyParts.push(buf.subarray(at, at + take));
          this.bodyBytes += take;
          at += take;
          this.left -= take;
          if (this.left === 0) this.phase = Phase.ChunkEnd;
          break;
        }
        case Phase.ChunkEnd: {
          if (buf.length - at < 2) return at;
          if (buf[at] !== 13 || buf[at + 1] !== 10) return this.refuse("malformed");
          at += 2;
          this.phase = Phase.ChunkSize;
          break;
        }
        case Phase.Trailers: {
          // Trailer fields are read and dropped; an empty line ends the message.
          const end = buf.indexOf(CRLF, at);
          if (end === -1) {
            if (buf.length - at + this.left > limits.maxHeaderBytes) return this.refuse("headers_too_large");
            return at;
          }
          if (end === at) {
            at += 2;
            this.complete();
            break;
          }
          if (!FIELD_LINE.test(buf.toString("latin1", at, end))) return this.refuse("malformed");
          this.left += end - at + 2;
          if (this.left > limits.maxHeaderBytes) return this.refuse("headers_too_large");
          at = end + 2;
          break;
        }
        case Phase.Closed:
          return buf.length;
      }
    }
    return at;
  }

  /** A request head was read: frames its body and routes it (or refuses the connection). */
  private begin(head: Http1Head): void {
    const { headers, minor } = head;
    let contentLength: string | undefined;
    let transferEncoding: string | undefined;
    let connection: string | undefined;
    let expect: string | undefined;
    let host = false;
    for (let i = 0; i < headers.length; i += 2) {
      switch (headers[i]) {
        case "content-length":
          // Two lengths are a smuggling attempt or a broken client either way.
          if (contentLength !== undefined) return void this.refuse("malformed");
          contentLength = headers[i + 1]!;
          break;
        case "transfer-encoding":
          transferEncoding = transferEncoding === undefined ? headers[i + 1]! : `${transferEncoding}, ${headers[i + 1]!}`;
          break;
        case "connection":
          connection = connection === undefined ? headers[i + 1]! : `${connection}, ${headers[i + 1]!}`;
          break;
        case "expect":
          expect = expect === undefined ? headers[i + 1]! : `${expect}, ${headers[i + 1]!}`;
          break;
        case "host":
          host = true;
          break;
      }
    }
    if (minor === 1 && !host) return void this.refuse("malformed");
    let chunked = false;
    let length = 0;
    if (transferEncoding !== undefined) {
      // Only chunked is understood, and with a Content-Length beside it the length is ambiguous.
      if (contentLength !== undefined || transferEncoding.trim().toLowerCase() !== "chunked") return void this.refuse("malformed");
      chunked = true;
    } else if (contentLength !== undefined) {
      if (!DIGITS.test(contentLength)) return void this.refuse("malformed");
      length = Number(contentLength);
    }
    const keepAlive = minor === 1 ? !hasToken(connection, "close") : hasToken(connection, "keep-alive");
    // A declared body over the limit is never read: whatever answers it, the connection ends.
    const tooLarge = length > this.server.limits.maxBodyBytes;
    const exchange = new Http1Exchange(this, head.method, head.url, minor, headers, keepAlive && !tooLarge && !this.server.draining);
    this.queue.push(exchange);
    this.server.inFlight++;
    this.current = exchange;
    this.handler = null;
    this.bodyParts = [];
    this.bodyBytes = 0;
    this.left = 0;
    if (expect !== undefined && (minor === 0 || expect.toLowerCase() !== "100-continue")) return void this.refuse("expectation_failed");
    let handler: Http1Handler | null;
    try {
      handler = this.server.options.route(exchange);
    } catch (error) {
      this.server.options.handlerError(exchange, error);
      handler = null;
    }
    if (tooLarge) {
      if (handler !== null) return void this.refuse("body_too_large");
      // Answered already, with Connection: close.
      this.current = null;
      this.phase = Phase.Closed;
      return;
    }
    this.handler = handler;
    if (expect !== undefined && handler !== null && (chunked || length > 0) && this.queue.length === 1) this.socket.write(CONTINUE);
    if (chunked) {
      this.phase = Phase.ChunkSize;
    } else if (length > 0) {
      this.phase = Phase.Body;
      this.left = length;
    } else {
      this.complete();
    }
  }

  /** The current request is whole: its handler runs (if it has one). */
  private complete(): void {
    const exchange = this.current!;
    const handler = this.handler;
    if (handler !== null && this.bodyParts.length > 0) exchange.body = this.bodyParts.length === 1 ? this.bodyParts[0]! : Buffer.concat(this.bodyParts, this.bodyBytes);
    this.current = null;
    this.handler = null;
    this.bodyParts = [];
    this.bodyBytes = 0;
    this.left = 0;
    this.phase = exchange.closeAfter ? Phase.Closed : Phase.Head;
    this.sinceS = clockS;
    if (handler === null) return;
    try {
      const pending = handler(exchange);
      if (pending !== undefined) pending.catch((error: unknown) => this.server.options.handlerError(exchange, error));
    } catch (error) {
      this.server.options.handlerError(exchange, error);
    }
  }

  /**
   * This layer refuses the request being read (or one whose head is not complete): its answer goes
   * out after the answers owed before it, then the connection ends. Returns the end of the input.
   */
  private refuse(kind: Http1ClientError): number {
    let exchange = this.current;
    if (exchange === null || exchange.answered) {
      exchange = new Http1Exchange(this, "GET", "/", 1, [], false);
      this.queue.push(exchange);
      this.server.inFlight++;
    }
    this.current = null;
    this.handler = null;
    this.phase = Phase.Closed;
    const answer = this.server.options.clientError(kind);
    exchange.send(CLIENT_ERROR_STATUS[kind], answer.headers, answer.body, true);
    return Number.MAX_SAFE_INTEGER;
  }

  /** Waiting in the server's toFlush list. */
  flushPending = false;

  /**
   * An exchange was answered: the answers ready at the head of the queue are written at the end of
   * this event-loop turn's I/O phase, with every other connection's (setImmediate). Each write to a
   * peer that sleeps wakes it, which costs the writer more than the write; answers written one by
   * one as each request is read wake the client once per answer, answers written together once per
   * turn (bench: the deny path's server CPU per decision). The wait is the rest of the current turn.
   */
  answered(exchange: Http1Exchange): void {
    if (this.dead) this.forget(exchange);
    else if (this.queue[0] === exchange && !this.flushPending) {
      this.flushPending = true;
      const server = this.server;
      server.toFlush.push(this);
      if (!server.flushScheduled) {
        server.flushScheduled = true;
        setImmediate(flushAll, server);
      }
    }
  }

  private forget(exchange: Http1Exchange): void {
    if (exchange.done) return;
    exchange.done = true;
    exchange.out = null;
    this.server.inFlight--;
    if (this.server.inFlight === 0) this.server.onIdle?.();
  }

  flush(): void {
    this.flushPending = false;
    const queue = this.queue;
    let ready = 0;
    while (ready < queue.length && queue[ready]!.out !== null) ready++;
    if (ready === 0) return;
    if (ready > 1) this.socket.cork();
    let ended = false;
    for (let i = 0; i < ready; i++) {
      const exchange = queue[i]!;
      if (!ended) {
        this.socket.write(exchange.out!, exchange.ascii ? "latin1" : "utf8");
        ended = exchange.closeAfter;
      }
      this.forget(exchange);
    }
    queue.splice(0, ready);
    if (ready > 1) this.socket.uncork();
    if (ended || (queue.length === 0 && (this.phase === Phase.Closed || (this.server.draining && this.buf === null && this.phase === Phase.Head)))) {
      this.end();
      return;
    }
    if (queue.length === 0) this.sinceS = clockS;
    if (this.socket.writableLength > MAX_UNSENT_BYTES) this.pause();
    else if (this.paused) this.resume();
  }

  /** Ends the connection once what is written is sent; answers still owed are dropped. */
  private end(): void {
    this.dead = true;
    this.phase = Phase.Closed;
    this.buf = null;
    this.sinceS = clockS;
    for (const e of this.queue) this.forget(e);
    this.queue.length = 0;
    this.socket.end();
  }

  private pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.socket.pause();
  }

  private resume(): void {
    if (!this.paused || this.dead) return;
    if (this.queue.length >= MAX_PIPELINED || this.socket.writableLength > MAX_UNSENT_BYTES) return;
    this.paused = false;
    this.socket.resume();
    this.parse();
  }

  private onClose(): void {
    this.dead = true;
    this.phase = Phase.Closed;
    this.buf = null;
    for (const e of this.queue) this.forget(e);
    this.queue.length = 0;
    this.server.connections.delete(this);
    if (this.server.connections.size === 0) this.server.onIdle?.();
  }

  /** The timeouts (every second, from the server's sweep). */
  sweep(): void {
    const { limits } = this.server;
    const elapsedMs = (clockS - this.sinceS) * 1000;
    if (this.dead) {
      // Ended, and the peer neither reads nor closes: let it go.
      if (elapsedMs > limits.keepAliveTimeoutMs) this.socket.destroy();
      return;
    }
    if (this.idle) {
      if (elapsedMs > limits.keepAliveTimeoutMs || this.server.draining) this.destroyIdle();
      return;
    }
    // Waiting for its own answers (no request being read): no client timeout applies.
    if (this.current === null && this.buf === null) return;
    if (elapsedMs > (this.phase === Phase.Head ? limits.headersTimeoutMs : limits.requestTimeoutMs)) this.refuse("timeout");
  }

  destroyIdle(): void {
    this.dead = true;
    this.socket.destroy();
  }
}

function flushAll(server: ServerState): void {
  server.flushScheduled = false;
  const conns = server.toFlush.splice(0);
  for (const conn of conns) conn.flush();
}

export interface Http1Server {
  readonly server: net.Server;
  /** Requests read and not yet answered. */
  inFlight(): number;
  /** Stops accepting, closes idle connections, waits for requests in flight (at most `graceMs`), then closes every connection. */
  drain(graceMs?: number): Promise<void>;
}

/** Creates the server (call `server.listen`). */
export function createHttp1Server(options: Http1Options): Http1Server {
  const limits: Http1Limits = { ...DEFAULT_HTTP1_LIMITS };
  for (const name of Object.keys(DEFAULT_HTTP1_LIMITS) as (keyof Http1Limits)[]) {
    const value = options[name];
    if (value !== undefined) limits[name] = value;
  }
  const keepAliveS = Math.max(1, Math.floor(limits.keepAliveTimeoutMs / 1000));
  const state: ServerState = {
    toFlush: [],
    flushScheduled: false,
    limits,
    options,
    keepAliveLines11: `Keep-Alive: timeout=${keepAliveS}\r\n`,
    keepAliveLines10: `Connection: keep-alive\r\nKeep-Alive: timeout=${keepAliveS}\r\n`,
    draining: false,
    connections: new Set(),
    inFlight: 0,
    onIdle: null,
  };
  const server = net.createServer({ noDelay: true }, (socket) => {
    const conn = new Connection(socket, state);
    state.connections.add(conn);
    if (state.draining) conn.destroyIdle();
  });
  const sweep = setInterval(() => {
    clockS++;
    dateLine = `Date: ${new Date().toUTCString()}\r\n`;
    for (const conn of state.connections) conn.sweep();
  }, 1_000);
  sweep.unref();
  server.on("close", () => clearInterval(sweep));

  async function drain(graceMs = 10_000): Promise<void> {
    state.draining = true;
    server.close();
    for (const conn of state.connections) if (conn.idle) conn.destroyIdle();
    if (state.inFlight > 0 || state.connections.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        timer.unref();
        state.onIdle = () => {
          if (state.inFlight > 0) return;
          for (const conn of state.connections) if (conn.idle) conn.destroyIdle();
          if (state.connections.size === 0) {
            clearTimeout(timer);
            resolve();
          }
        };
        state.onIdle();
      });
    }
    for (const conn of state.connections) conn.socket.destroy();
    clearInterval(sweep);
  }

  return { server, inFlight: () => state.inFlight, drain };
}
