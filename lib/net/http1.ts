/**
 * The hand-written HTTP/1.1 server on node:net, the decision server's default (`SLUICE_HTTP_SERVER=
 * http1`): ./http-server.ts says why it exists, docs/decision-api.md#http what it guarantees and
 * does not support. A request travels through ./http1-connection.ts (reading, limits, timeouts,
 * answers in order), ./http1-head.ts (the RFC 9112 grammar and the framing it declares) and
 * ./http1-exchange.ts (one request and its answer); this file holds the connections, the clock and drain.
 */
import net from "node:net";
import { httpLimits, waitForDrain, type HttpServer, type HttpServerOptions } from "./http-server";
import { Connection } from "./http1-connection";
import { dateLine, Http1ServerState } from "./http1-exchange";

/** Creates the server (call `server.listen`). */
export function createHttp1Server(options: HttpServerOptions): HttpServer {
  const state = new Http1ServerState<Connection>(httpLimits(options), options);
  // Half-open: a client that sends its requests and then half-closes still gets its answers (Connection.afterInput).
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

  /** Closes the connections owed nothing: how many are left. */
  function closeIdle(): number {
    for (const conn of state.connections) if (conn.idle) conn.destroyIdle();
    return state.connections.size;
  }

  async function drain(graceMs = 10_000): Promise<void> {
    state.draining = true;
    server.close();
    closeIdle();
    await waitForDrain(graceMs, () => state.inFlight === 0 && closeIdle() === 0, (onChange) => (state.onIdle = onChange));
    for (const conn of state.connections) conn.socket.destroy();
    clearInterval(sweep);
  }

  return { server, kind: "http1", inFlight: () => state.inFlight, drain };
}
