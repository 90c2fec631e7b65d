/** The decision server's HTTP/1.1 server of either kind (./http-server.ts has the interface and why there are two). */
import type { HttpServer, HttpServerKind, HttpServerOptions } from "./http-server";
import { createHttp1Server } from "./http1";
import { createNodeHttpServer } from "./http-node";

/** Creates the server of that kind (call `server.listen`). */
export function createHttpServer(kind: HttpServerKind, options: HttpServerOptions): HttpServer {
  return kind === "node" ? createNodeHttpServer(options) : createHttp1Server(options);
}
