/** One request of lib/net/http1.ts and its answer, and the state a server shares with its connections: both name a connection by what they ask of it, as ./http1-connection.ts imports this file. */
import { STATUS_CODES } from "node:http";
import { headerLines, pathOf, type HttpExchange, type HttpLimits, type HttpServerOptions } from "./http-server";
import { headerValue } from "./http1-head";

export const dateLine = () => `Date: ${new Date().toUTCString()}\r\n`;

/** What a server's connections share: one per server, so two servers in one process keep their own clock and Date line. */
export class Http1ServerState<C extends { flush(): void } = { flush(): void }> {
  /** Seconds since the server started, advanced by its own sweep: the coarse clock of its timeouts. */
  clockS = 0;
  /** `Date: …\r\n` of its answers, renewed by its sweep. */
  dateLine = dateLine();
  /** The keep-alive lines of an answer that keeps the connection (HTTP/1.1, and HTTP/1.0 which asked for it). */
  readonly keepAliveLines11: string;
  readonly keepAliveLines10: string;
  /** Connections with answers ready to write, written together at the end of this event-loop turn's I/O. */
  readonly toFlush: C[] = [];
  flushScheduled = false;
  draining = false;
  readonly connections = new Set<C>();
  inFlight = 0;
  /** Drain's watcher (waitForDrain): told when no request is in flight, or no connection is left. */
  onIdle: (() => void) | null = null;

  constructor(
    readonly limits: HttpLimits,
    readonly options: HttpServerOptions,
  ) {
    const keepAliveS = Math.max(1, Math.floor(limits.keepAliveTimeoutMs / 1000));
    this.keepAliveLines11 = `Keep-Alive: timeout=${keepAliveS}\r\n`;
    this.keepAliveLines10 = `Connection: keep-alive\r\n${this.keepAliveLines11}`;
  }

  /**
   * A connection has answers ready: it writes them at the end of this event-loop turn's I/O phase,
   * with every other connection's (setImmediate). Each write wakes a sleeping client, which costs the
   * writer more than the write: one write per turn instead of one per answer (the numbers are in
   * docs/decision-api.md#http, "Writes").
   */
  scheduleFlush(conn: C): void {
    this.toFlush.push(conn);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(flushAll, this);
    }
  }
}

const EMPTY = Buffer.alloc(0);

function flushAll(server: Http1ServerState): void {
  server.flushScheduled = false;
  for (const conn of server.toFlush.splice(0)) conn.flush();
}

/** `HTTP/1.1 <status> <reason>\r\n` of every status node:http names, built once (constants, the same for every server). */
const STATUS_LINES: ReadonlyMap<number, string> = new Map(Object.entries(STATUS_CODES).map(([status, reason]) => [Number(status), `HTTP/1.1 ${status} ${reason}\r\n`]));
const statusLine = (status: number) => STATUS_LINES.get(status) ?? `HTTP/1.1 ${status} Unknown\r\n`;

export class Http1Exchange implements HttpExchange {
  /** The whole body (set before the handler runs; empty until then). */
  body: Buffer = EMPTY;
  /** The answer's status line, Date and the caller's header lines, once sent; null before, and once written. */
  head: string | null = null;
  /** `Content-Length: n`, the empty line and the body (none for HEAD). */
  tail = "";
  /** This answer ends the connection (decided up to the moment it is written). */
  closeAfter: boolean;
  /** The answer is ASCII (the head always is; the body may not be). */
  ascii = true;
  /** Written to the socket (or dropped: the connection is gone). */
  done = false;
  readonly path: string;

  constructor(
    private readonly conn: { readonly server: Http1ServerState; answered(exchange: Http1Exchange): void },
    readonly method: string,
    readonly url: string,
    /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
    readonly minor: number,
    /** [lower-case name, value, …] as sent. */
    readonly headers: readonly string[],
    keepAlive: boolean,
  ) {
    this.path = pathOf(url);
    this.closeAfter = !keepAlive;
  }

  header(name: string): string | undefined {
    return headerValue(this.headers, name);
  }

  get answered(): boolean {
    return this.head !== null || this.done;
  }

  send(status: number, headers: readonly string[], body: string, close = false): void {
    this.sendLines(status, headerLines(headers), body, close);
  }

  sendLines(status: number, lines: string, body: string, close = false): void {
    if (this.head !== null || this.done) return;
    if (close) this.closeAfter = true;
    this.head = statusLine(status) + this.conn.server.dateLine + lines;
    const bytes = Buffer.byteLength(body);
    // HEAD: the length the body would have, and no body.
    this.tail = this.method === "HEAD" ? `Content-Length: ${bytes}\r\n\r\n` : `Content-Length: ${bytes}\r\n\r\n${body}`;
    // An all-ASCII answer (the usual one) is written as latin1: the same bytes, copied instead of encoded.
    this.ascii = bytes === body.length;
    this.conn.answered(this);
  }

  /**
   * The answer's bytes, with the connection's own lines put in only now: a request refused after
   * its answer was sent (its skipped body turned out malformed) still gets one answer, which then
   * says `Connection: close`.
   */
  bytes(server: Http1ServerState): string {
    if (server.draining) this.closeAfter = true;
    const connection = this.closeAfter ? "Connection: close\r\n" : this.minor === 0 ? server.keepAliveLines10 : server.keepAliveLines11;
    return this.head! + connection + this.tail;
  }
}
