/**
 * The decision server's HTTP/1.1 server as a port: one small interface, two implementations,
 * chosen by SLUICE_HTTP_SERVER (docs/decision-api.md#http):
 *
 * - `http1` (the default): lib/net/http1.ts, hand-written on node:net. It exists for speed only: on
 *   a path that answers a few hundred bytes per request, node:http's per-request objects cost about
 *   as much CPU as the decision itself (docs/benchmarks.md).
 * - `node`: lib/net/http-node.ts, node:http behind the same interface: the reference the first is
 *   tested against (lib/net/http-server.test.ts runs one suite on both; http-differential.test.ts
 *   feeds both the same hostile byte streams), and the fallback if a bug is ever found in it.
 *
 * ./create-http-server.ts makes one of either kind. A caller sees a request once its head is read
 * (`route`: answer at once, or name the handler that gets the whole body), then its answer as one
 * status, a flat header list and one body string.
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
  for (const name of Object.keys(DEFAULT_HTTP_LIMITS) as (keyof HttpLimits)[]) {
    const value = given[name];
    if (value !== undefined) limits[name] = value;
  }
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

/** A header value this server writes: no control characters but tab (no response splitting). */
const UNSAFE_VALUE = /[\0-\x08\x0a-\x1f\x7f]/;

/** Throws when a header value could split the answer. */
export function checkHeaderValue(name: string, value: string): void {
  if (UNSAFE_VALUE.test(value)) throw new Error(`header ${name}: control character in its value`);
}
