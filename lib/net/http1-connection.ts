/**
 * One connection of lib/net/http1.ts: reads requests off the socket (head, then a Content-Length
 * or chunked body), hands each to the server's route and handler, and writes the answers in
 * request order. It reads in the order the bytes arrive: onData → parse → begin (a head) →
 * complete (a whole request) or refuse; then answered → flush; the sweep judges the timeouts.
 */
import type net from "node:net";
import { MAX_UNSENT_BYTES, routeRequest, runHandler, sendClientError, type HttpClientError, type HttpHandler } from "./http-server";
import { Http1Exchange, type Http1ServerState } from "./http1-exchange";
import { chunkSize, FIELD_LINE, frameRequest, MAX_CHUNK_LINE, parseHead, REQUEST_LINE, type Http1Head } from "./http1-head";

const CRLF = Buffer.from("\r\n");
const CRLFCRLF = Buffer.from("\r\n\r\n");
const CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n";
/** parse() stopped for good: the rest of the input is not read. */
const END_OF_INPUT = Number.MAX_SAFE_INTEGER;

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

export class Connection {
  /** Bytes read and not parsed yet. */
  private buf: Buffer | null = null;
  private phase = Phase.Head;
  /** The request whose body is being read, and its handler (null: the body is skipped). */
  private current: Http1Exchange | null = null;
  private handler: HttpHandler | null = null;
  /** Body bytes (or chunk bytes) still to read; trailer bytes read, in the Trailers phase. */
  private left = 0;
  private bodyParts: Buffer[] = [];
  private bodyBytes = 0;
  /** Answers in request order: the first is written as soon as it is sent. */
  private readonly queue: Http1Exchange[] = [];
  /** A request's first byte has arrived and the request is not whole yet: its timeouts run. */
  private reading = false;
  /** When the request being read started, or the connection went idle or ended (server.clockS). */
  private sinceS: number;
  /** Not read on purpose: its client does not read its answers, or has the most requests in flight. */
  private paused = false;
  /** Ended (or ending): answers sent now are dropped. */
  private dead = false;
  /** The client half-closed: what it sent is all there is. */
  private inputEnded = false;
  /** Waiting in the server's toFlush list. */
  flushPending = false;

  constructor(
    readonly socket: net.Socket,
    readonly server: Http1ServerState<Connection>,
  ) {
    this.sinceS = server.clockS;
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("end", () => {
      this.inputEnded = true;
      this.afterInput();
    });
    socket.on("drain", () => this.resume());
    socket.on("error", () => socket.destroy());
    socket.on("close", () => this.onClose());
  }

  /** No request in progress, no answer owed, and not paused with requests it has not read yet. */
  get idle(): boolean {
    return this.queue.length === 0 && !this.reading && this.phase === Phase.Head && !this.paused;
  }

  private onData(chunk: Buffer): void {
    if (this.phase === Phase.Closed) return;
    this.buf = this.buf === null ? chunk : Buffer.concat([this.buf, chunk]);
    this.parse();
  }

  /**
   * Once the client sent all it will send (a half-close) and all of it is read: the requests read are
   * still answered, then the connection ends; a request cut short can never be whole, and is refused.
   */
  private afterInput(): void {
    if (!this.inputEnded || this.paused || this.phase === Phase.Closed) return;
    if (this.reading || this.buf !== null) return void this.refuse("malformed");
    this.phase = Phase.Closed;
    if (this.queue.length === 0) this.end();
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
    this.afterInput();
  }

  /** The parse loop: returns where it stopped (a partial request, the pipelining bound, or the end). */
  private parseFrom(buf: Buffer): number {
    const limits = this.server.limits;
    let at = 0;
    while (at < buf.length && !this.paused) {
      switch (this.phase) {
        case Phase.Head: {
          // Empty lines before a request line are ignored (RFC 9112 §2.2), and are no activity:
          // they neither start a request's clock nor keep an idle connection open.
          while (at + 1 < buf.length && buf[at] === 13 && buf[at + 1] === 10) at += 2;
          if (at >= buf.length || (at + 1 === buf.length && buf[at] === 13)) return at;
          if (this.queue.length >= limits.maxPipelined) {
            this.pause();
            return at;
          }
          if (!this.reading) {
            this.reading = true;
            this.sinceS = this.server.clockS;
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
          if (typeof head === "string") return this.refuse(head);
          at = end + 4;
          this.begin(head);
          break;
        }
        case Phase.Body:
        case Phase.ChunkData: {
          const take = Math.min(this.left, buf.length - at);
          if (this.handler !== null) {
            // The usual case, a whole Content-Length body in this buffer, is not copied.
            if (this.phase === Phase.Body && take === this.left && this.bodyParts.length === 0) this.current!.body = buf.subarray(at, at + take);
            else this.bodyParts.push(buf.subarray(at, at + take));
          }
          this.bodyBytes += take;
          at += take;
          this.left -= take;
          if (this.left > 0) break;
          if (this.phase === Phase.Body) this.complete();
          else this.phase = Phase.ChunkEnd;
          break;
        }
        case Phase.ChunkSize: {
          const end = buf.indexOf(CRLF, at);
          if (end === -1) return buf.length - at > MAX_CHUNK_LINE ? this.refuse("malformed") : at;
          const size = chunkSize(buf.toString("latin1", at, end));
          if (size === -1) return this.refuse("malformed");
          at = end + 2;
          if (this.bodyBytes + size > limits.maxBodyBytes) return this.refuse("body_too_large");
          // The last chunk (size 0) leaves `left` at 0: it counts the trailers' bytes.
          this.left = size;
          this.phase = size === 0 ? Phase.Trailers : Phase.ChunkData;
          break;
        }
        case Phase.ChunkEnd: {
          if (buf.length - at < 2) return at;
          if (buf[at++] !== 13 || buf[at++] !== 10) return this.refuse("malformed");
          this.phase = Phase.ChunkSize;
          break;
        }
        case Phase.Trailers: {
          // Trailer fields are read and dropped; an empty line ends the message.
          const end = buf.indexOf(CRLF, at);
          if (end === -1) return buf.length - at + this.left > limits.maxHeaderBytes ? this.refuse("headers_too_large") : at;
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
    const server = this.server;
    const framing = frameRequest(head);
    if (typeof framing === "string") return void this.refuse(framing);
    const { chunked, length, expect } = framing;
    // A declared body over the limit is never read: whatever answers it, the connection ends.
    const tooLarge = length > server.limits.maxBodyBytes;
    const exchange = new Http1Exchange(this, head.method, head.url, head.minor, head.headers, framing.keepAlive && !tooLarge && !server.draining);
    this.queue.push(exchange);
    server.inFlight++;
    // handler, bodyParts, bodyBytes and left were reset when the previous request completed.
    this.current = exchange;
    if (expect === "other") return void this.refuse("expectation_failed");
    const handler = routeRequest(server.options, exchange);
    if (tooLarge) {
      // Answered already (with Connection: close) when it has no handler.
      if (handler !== null) this.refuse("body_too_large");
      else this.stopReading();
      return;
    }
    this.handler = handler;
    if (expect === "continue" && handler !== null && (chunked || length > 0) && this.queue.length === 1) this.socket.write(CONTINUE);
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
    this.reading = false;
    this.phase = exchange.closeAfter ? Phase.Closed : Phase.Head;
    this.sinceS = this.server.clockS;
    if (handler !== null) runHandler(this.server.options, handler, exchange);
  }

  /**
   * This layer refuses the request being read (or one whose head is not complete): its answer goes
   * out after the answers owed before it, then the connection ends. A request answered from its
   * head already (a 401 whose skipped body then breaks) gets no second answer: the one it has ends
   * the connection. Returns the end of the input.
   */
  private refuse(kind: HttpClientError): number {
    const exchange = this.current;
    this.stopReading();
    if (exchange !== null && exchange.answered) {
      exchange.closeAfter = true;
      // Its answer is written already when nothing is owed any more.
      if (this.queue.length === 0) this.end();
      return END_OF_INPUT;
    }
    let refused = exchange;
    if (refused === null) {
      refused = new Http1Exchange(this, "GET", "/", 1, [], false);
      this.queue.push(refused);
      this.server.inFlight++;
    }
    sendClientError(this.server.options, refused, kind);
    return END_OF_INPUT;
  }

  /** Reads no more requests: the connection ends once its answers are written. */
  private stopReading(): void {
    this.current = null;
    this.handler = null;
    this.reading = false;
    this.phase = Phase.Closed;
    this.buf = null;
  }

  /** An exchange was answered: if it is next in line, this connection writes at the end of the turn (Http1ServerState.scheduleFlush). */
  answered(exchange: Http1Exchange): void {
    if (this.dead) this.forget(exchange);
    else if (this.queue[0] === exchange && !this.flushPending) {
      this.flushPending = true;
      this.server.scheduleFlush(this);
    }
  }

  private forget(exchange: Http1Exchange): void {
    if (exchange.done) return;
    exchange.done = true;
    exchange.head = null;
    this.server.inFlight--;
    if (this.server.inFlight === 0) this.server.onIdle?.();
  }

  flush(): void {
    this.flushPending = false;
    const { queue, server } = this;
    let ready = 0;
    while (ready < queue.length && queue[ready]!.head !== null) ready++;
    if (ready === 0) return;
    if (ready > 1) this.socket.cork();
    let ended = false;
    for (let i = 0; i < ready; i++) {
      const exchange = queue[i]!;
      if (!ended) {
        this.socket.write(exchange.bytes(server), exchange.ascii ? "latin1" : "utf8");
        ended = exchange.closeAfter;
      }
      this.forget(exchange);
    }
    queue.splice(0, ready);
    if (ready > 1) this.socket.uncork();
    if (ended || (queue.length === 0 && (this.phase === Phase.Closed || (server.draining && this.idle)))) {
      this.end();
      return;
    }
    if (queue.length === 0 && !this.reading) this.sinceS = server.clockS;
    if (this.socket.writableLength > MAX_UNSENT_BYTES) this.pause();
    else if (this.paused) this.resume();
  }

  /** Ends the connection once what is written is sent; answers still owed are dropped. */
  private end(): void {
    this.stop();
    this.sinceS = this.server.clockS;
    this.socket.end();
  }

  /** Reads nothing more and drops the answers still owed. */
  private stop(): void {
    this.dead = true;
    this.phase = Phase.Closed;
    this.buf = null;
    for (const e of this.queue) this.forget(e);
    this.queue.length = 0;
  }

  private pause(): void {
    this.paused = true;
    this.socket.pause();
  }

  private resume(): void {
    if (!this.paused || this.dead) return;
    if (this.queue.length >= this.server.limits.maxPipelined || this.socket.writableLength > MAX_UNSENT_BYTES) return;
    this.paused = false;
    // The time this server did not read is not its client's: a request it was reading starts its clock again.
    if (this.reading) this.sinceS = this.server.clockS;
    this.socket.resume();
    this.parse();
  }

  private onClose(): void {
    this.stop();
    this.server.connections.delete(this);
    if (this.server.connections.size === 0) this.server.onIdle?.();
  }

  /** The timeouts (every second, from the server's sweep). */
  sweep(): void {
    const { limits, clockS, draining } = this.server;
    const elapsedMs = (clockS - this.sinceS) * 1000;
    // Ended, and the peer neither reads nor closes: let it go. Idle past the keep-alive timeout: close.
    if (this.dead) return void (elapsedMs > limits.keepAliveTimeoutMs && this.socket.destroy());
    if (this.idle) return void ((elapsedMs > limits.keepAliveTimeoutMs || draining) && this.destroyIdle());
    // Waiting for its own answers, or not read on purpose (the client does not read what it is
    // owed): the client is not late, so no client timeout applies.
    if (!this.reading || this.paused) return;
    if (elapsedMs > (this.phase === Phase.Head ? limits.headersTimeoutMs : limits.requestTimeoutMs)) this.refuse("timeout");
  }

  destroyIdle(): void {
    this.dead = true;
    this.socket.destroy();
  }
}
