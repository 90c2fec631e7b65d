/**
 * Raw HTTP/1.1 on loopback sockets for the tests of lib/net's servers: a server of either kind on a
 * free port, byte streams written as given (split where the test says), and the answers parsed
 * back out of what came.
 */
import net from "node:net";
import { createHttpServer } from "../create-http-server";
import type { HttpExchange, HttpHandler, HttpServer, HttpServerKind, HttpServerOptions } from "../http-server";

export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The answers in a byte stream (Content-Length framed; 1xx have none; `headOnly`: answers to HEAD). */
export function parseReplies(text: string, headOnly = false): Reply[] {
  const out: Reply[] = [];
  let at = 0;
  while (at < text.length) {
    const end = text.indexOf("\r\n\r\n", at);
    if (end === -1) break;
    const lines = text.slice(at, end).split("\r\n");
    const status = Number(lines[0]!.split(" ")[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(":");
      headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
    }
    const length = status < 200 || headOnly ? 0 : Number(headers["content-length"] ?? 0);
    out.push({ status, headers, body: text.slice(end + 4, end + 4 + length) });
    at = end + 4 + length;
  }
  return out;
}

export const statuses = (text: string) => parseReplies(text).map((r) => r.status);

/** Answers `<method> <url> <body>` (text/plain, X-Host: the Host header). */
export const echo: HttpHandler = (ex: HttpExchange) => {
  ex.send(200, ["Content-Type", "text/plain", "X-Host", ex.header("host") ?? "-"], `${ex.method} ${ex.url} ${ex.body.toString("utf8")}`);
};

export interface StartedServer {
  port: number;
  http: HttpServer;
  /** What reached handlerError. */
  errors: unknown[];
}

/** A server of `kind` on 127.0.0.1 (route: every request to `handler`, the echo by default); `servers` collects it for the afterEach drain. */
export async function startServer(kind: HttpServerKind, servers: HttpServer[], overrides: Partial<HttpServerOptions> = {}, handler: HttpHandler = echo): Promise<StartedServer> {
  const errors: unknown[] = [];
  const http = createHttpServer(kind, {
    route: () => handler,
    clientError: (kind) => ({ headers: ["Content-Type", "application/json"], body: JSON.stringify({ error: kind }) }),
    handlerError: (ex, error) => {
      errors.push(error);
      ex.send(500, [], "internal");
    },
    ...overrides,
  });
  servers.push(http);
  await new Promise<void>((resolve) => http.server.listen(0, "127.0.0.1", resolve));
  return { port: (http.server.address() as net.AddressInfo).port, http, errors };
}

/**
 * Writes the chunks one after the other (each its own write, `pauseMs` between them) and collects
 * everything until the server closes, `replies` answers came, or `settleMs` pass with nothing new
 * after the last write.
 */
export function exchange(port: number, chunks: readonly (string | Buffer)[], { settleMs = 300, pauseMs = 2, replies = Infinity } = {}): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let text = "";
    let quiet: NodeJS.Timeout | undefined;
    let written = false;
    const finish = (closed: boolean) => {
      clearTimeout(quiet);
      socket.destroy();
      resolve({ text, closed });
    };
    const arm = () => {
      clearTimeout(quiet);
      if (written) quiet = setTimeout(() => finish(false), settleMs);
    };
    socket.on("data", (d: Buffer) => {
      text += d.toString("latin1");
      if (parseReplies(text).length >= replies) finish(false);
      else arm();
    });
    socket.on("end", () => finish(true));
    socket.on("close", () => finish(true));
    socket.on("error", (error: NodeJS.ErrnoException) => (error.code === "ECONNRESET" || error.code === "EPIPE" ? finish(true) : reject(error)));
    socket.on("connect", async () => {
      for (const c of chunks) {
        if (socket.destroyed) break;
        socket.write(c);
        if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
      }
      written = true;
      arm();
    });
  });
}

/** A connected socket, for tests that drive one by hand. */
export async function connect(port: number): Promise<net.Socket> {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return socket;
}

/** A connection that has had one request answered and is now idle; `closed()` tells whether the server has closed it since. */
export async function idleConnection(port: number): Promise<{ socket: net.Socket; closed: () => boolean }> {
  const socket = await connect(port);
  let closed = false;
  socket.on("close", () => (closed = true));
  socket.write(post("x"));
  await new Promise((resolve) => socket.once("data", resolve));
  return { socket, closed: () => closed };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** `POST /echo?q=1` with this body (Content-Length framed) and extra header lines. */
export const post = (body: string, extra = "") => `POST /echo?q=1 HTTP/1.1\r\nHost: t\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;
