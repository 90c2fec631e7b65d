/**
 * A small, strict HTTP/1.1 server on node:net: the decision server's default (`SLUICE_HTTP_SERVER=
 * http1`), behind the interface of ./http-server.ts; docs/decision-api.md#http is its contract.
 *
 * Why not node:http: on the decision path a request is a few hundred bytes in and out, and
 * node:http's per-request machinery (IncomingMessage and ServerResponse streams, events, header
 * objects) costs about as much CPU as the whole decision (bench: node:http hello ≈ 20 µs of server
 * CPU per request, a plain socket answering the same bytes ≈ 11 µs). This server parses a request
 * into one object, hands the handler the whole body (bounded), and writes the answer as one string
 * in one write. It goes when a Node release's node:http answers at the same cost: `npm run bench`
 * runs both (SLUICE_HTTP_SERVER=node is ./http-node.ts). Everything node:http does for a server
 * like this one it does too:
 *
 * - framing: Content-Length or chunked bodies (trailers read and ignored), never both (400, the
 *   request-smuggling rule); keep-alive (HTTP/1.1 by default, HTTP/1.0 when asked), `Connection:
 *   close`; pipelined requests answered in order (at most `maxPipelined` in flight per connection);
 *   `Expect: 100-continue` answered `100 Continue` (any other expectation: 417); HEAD answers carry
 *   no body; HTTP/1.1 without Host is 400 (as node's requireHostHeader);
 * - limits: a head over `maxHeaderBytes` or with more than `maxHeaders` lines is 431; a body over
 *   `maxBodyBytes` is 413 without reading it, and the connection is closed;
 * - strictness: a request line or header that is not RFC 9112 (bare CR or LF, obs-fold, a space
 *   before the colon, a control character, a bad Content-Length or chunk size) is 400 and closes the
 *   connection: never guessed at (./http1-head.ts);
 * - one answer per request, in order (./http1-connection.ts);
 * - timeouts, judged by one sweep per server every second on the server's own clock: a head not
 *   complete within `headersTimeoutMs` or a request within `requestTimeoutMs` of its first byte is
 *   408 and closed; a connection idle for `keepAliveTimeoutMs` is closed (empty lines are no
 *   activity);
 * - backpressure: a client that does not read its answers stops being read, and no client timeout
 *   runs meanwhile (the wait is the server's choice); memory stays bounded per connection;
 * - drain: stop accepting, close idle connections, let requests in flight finish (their answers say
 *   `Connection: close`), then close what is left after the grace period.
 *
 * What it does not do: upgrades (WebSocket, h2c), trailers for the handler, absolute-form targets
 * (they are passed as sent), compression. The decision server needs none of them.
 */
import net from "node:net";
import { httpLimits, type HttpServer, type HttpServerOptions } from "./http-server";
import { Connection } from "./http1-connection";
import type { Http1ServerState } from "./http1-exchange";

const dateLine = () => `Date: ${new Date().toUTCString()}\r\n`;

/** Creates the server (call `server.listen`). */
export function createHttp1Server(options: HttpServerOptions): HttpServer {
  const limits = httpLimits(options);
  const keepAliveS = Math.max(1, Math.floor(limits.keepAliveTimeoutMs / 1000));
  const state: Http1ServerState = {
    limits,
    options,
    clockS: 0,
    dateLine: dateLine(),
    keepAliveLines11: `Keep-Alive: timeout=${keepAliveS}\r\n`,
    keepAliveLines10: `Connection: keep-alive\r\nKeep-Alive: timeout=${keepAliveS}\r\n`,
    toFlush: [],
    flushScheduled: false,
    draining: false,
    connections: new Set(),
    inFlight: 0,
    onIdle: null,
  };
  // Half-open: a client that sends its requests and then half-closes still gets its answers (onEnd).
  const server = net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) => {
    const conn = new Connection(socket, state);
    state.connections.add(conn);
    if (state.draining) conn.destroyIdle();
  });
  // This server's clock: seconds counted by its own sweep, so that a timeout is judged against the
  // time this server saw pass, whatever other servers share the process.
  const sweep = setInterval(() => {
    state.clockS++;
    state.dateLine = dateLine();
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

  return { server, kind: "http1", inFlight: () => state.inFlight, drain };
}
