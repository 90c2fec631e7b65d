/**
 * The decision server's HTTP/1.1 server as a port, chosen by SLUICE_HTTP_SERVER: `http1`
 * (./http1.ts, hand-written on node:net: the default, for speed only, since node:http's per-request
 * objects cost about as much CPU as the decision itself) or `node` (./http-node.ts, node:http: the
 * reference the first is tested against, and the fallback). docs/decision-api.md#http is the
 * contract both keep (http-server.test.ts runs one suite on both; http-differential.test.ts feeds
 * both the same hostile byte streams). A caller sees a request once its head is read (`route`:
 * answer at once, or name the handler that gets the whole body), then answers with one status, a
 * flat header list and one body string. ./create-http-server.ts makes one of either kind.
 */
import type net from "node:net";

export const HTTP_SERVERS = ["http1", "node"] as const;
export type HttpServerKind = (typeof HTTP_SERVERS)[number];

/** What one client may make the server hold or wait for (SLUICE_HTTP_* settings, lib/env.ts). */
export interface HttpLimits {
  /** Header lines of one request (431 past it: a dropped line could be the one that frames the body). */
  maxHeaders: number;
  /** The request line and headers together, in bytes (431 past it). */
  maxHeaderBytes: number;
  /** A request body, in bytes (413 past it, and the connection closes). */
  maxBodyBytes: number;
  /** From a request's first byte to the end of its head (408 past it). */
  headersTimeoutMs: number;
  /** From a request's first byte to the end of its body (408 past it). */
  requestTimeoutMs: number;
  /** How long a connection may sit idle between requests (empty lines do not count as activity). */
  keepAliveTimeoutMs: number;
  /** Requests of one connection read but not yet answered; past it the connection is not read further. */
  maxPipelined: number;
}

export const DEFAULT_HTTP_LIMITS: Readonly<HttpLimits> = {
  maxHeaders: 100,
  maxHeaderBytes: 16 * 1024,
  maxBodyBytes: 64 * 1024,
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  maxPipelined: 16,
};

/** The limits with `given`'s values where it has them. */
export function httpLimits(given: Partial<HttpLimits>): HttpLimits {
  const limits = { ...DEFAULT_HTTP_LIMITS };
  for (const name of Object.keys(limits) as (keyof HttpLimits)[]) limits[name] = given[name] ?? limits[name];
  return limits;
}

/** Why the server refused a request itself (the caller words the answer; the status is fixed). */
export type HttpClientError = "malformed" | "headers_too_large" | "body_too_large" | "timeout" | "expectation_failed";

export const CLIENT_ERROR_STATUS: Readonly<Record<HttpClientError, number>> = {
  malformed: 400,
  headers_too_large: 431,
  body_too_large: 413,
  timeout: 408,
  expectation_failed: 417,
};

/** One request and its answer. */
export interface HttpExchange {
  readonly method: string;
  /** The request target as sent (`/v1/check?x=1`). */
  readonly url: string;
  /** The target without its query. */
  readonly path: string;
  /** The whole body: empty until the handler runs. */
  readonly body: Buffer;
  /** A request header by lower-case name, as node:http's `req.headers[name]` gives it (repeats joined by ", ", the first of single-valued names). */
  header(name: string): string | undefined;
  /** An answer was sent (or the connection is gone). */
  readonly answered: boolean;
  /**
   * Answers: `headers` a flat [name, value, …] list (Content-Length, Date and the connection's own
   * headers are added); a value with a control character throws (no response splitting). A second
   * answer is ignored. `close`: end the connection after it.
   */
  send(status: number, headers: readonly string[], body: string, close?: boolean): void;
  /** send() with the header lines already written (`Name: value\r\n` each), for lines built from constants and numbers only: nothing in them is checked. */
  sendLines(status: number, lines: string, body: string, close?: boolean): void;
}

/** The handler of a request whose whole body has been read. */
export type HttpHandler = (exchange: HttpExchange) => void | Promise<void>;

export interface HttpServerOptions extends Partial<HttpLimits> {
  /**
   * Called once a request's head is read, before its body: returns the handler that gets the
   * request with its whole body, or answers at once (exchange.send) and returns null; the body is
   * then skipped (a 404, a 405, a missing credential never makes the server buffer a body).
   */
  route(exchange: HttpExchange): HttpHandler | null;
  /** The headers and body of an answer the server gives itself (the status is the kind's). */
  clientError(kind: HttpClientError): { headers: readonly string[]; body: string };
  /** A handler threw or rejected: answer it (if it was not answered yet) and report it. */
  handlerError(exchange: HttpExchange, error: unknown): void;
}

export interface HttpServer {
  /** Listen on it; it emits `connection` for every socket. */
  readonly server: net.Server;
  readonly kind: HttpServerKind;
  /** Requests read and not yet answered. */
  inFlight(): number;
  /** Stops accepting, closes idle connections, waits for requests in flight (at most `graceMs`), then closes every connection. */
  drain(graceMs?: number): Promise<void>;
}

const UNSAFE_VALUE = /[\0-\x08\x0a-\x1f\x7f]/;

/** Throws when a header value could split the answer: no control characters but tab. */
export function checkHeaderValue(name: string, value: string): void {
  if (UNSAFE_VALUE.test(value)) throw new Error(`header ${name}: control character in its value`);
}

/** `Name: value\r\n` for each header of a flat [name, value, …] list, every value checked (checkHeaderValue). */
export function headerLines(headers: readonly string[]): string {
  let lines = "";
  for (let i = 0; i < headers.length; i += 2) {
    checkHeaderValue(headers[i]!, headers[i + 1]!);
    lines += `${headers[i]!}: ${headers[i + 1]!}\r\n`;
  }
  return lines;
}

/** Written but unsent bytes of one connection before it is read further (its client does not read its answers). */
export const MAX_UNSENT_BYTES = 256 * 1024;

/** The request target without its query. */
export function pathOf(url: string): string {
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q);
}

/** `options.route` for a request whose head is read; if it throws, handlerError answers and the body is skipped. */
export function routeRequest(options: HttpServerOptions, exchange: HttpExchange): HttpHandler | null {
  try {
    return options.route(exchange);
  } catch (error) {
    options.handlerError(exchange, error);
    return null;
  }
}

/** Runs the handler of a whole request; a throw or a rejection goes to handlerError. */
export function runHandler(options: HttpServerOptions, handler: HttpHandler, exchange: HttpExchange): void {
  try {
    const pending = handler(exchange);
    if (pending !== undefined) pending.catch((error: unknown) => options.handlerError(exchange, error));
  } catch (error) {
    options.handlerError(exchange, error);
  }
}

/** Answers a request the server refuses itself (worded by the caller), and ends its connection. */
export function sendClientError(options: HttpServerOptions, exchange: HttpExchange, kind: HttpClientError): void {
  const answer = options.clientError(kind);
  exchange.send(CLIENT_ERROR_STATUS[kind], answer.headers, answer.body, true);
}

/**
 * Drain's wait, once the server stopped accepting: resolves when `settled()` holds, asked now and
 * at every change the adapter reports through `watch` (an answer done, a connection closed), or
 * after `graceMs`.
 */
export function waitForDrain(graceMs: number, settled: () => boolean, watch: (onChange: (() => void) | null) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const finish = () => {
      clearTimeout(timer);
      watch(null);
      resolve();
    };
    const timer = setTimeout(finish, graceMs);
    timer.unref();
    watch(() => {
      if (settled()) finish();
    });
    if (settled()) finish();
  });
}
