/**
 * The certification client's HTTP: node:http with one keep-alive agent per process, so hundreds
 * of scheduled requests share a bounded set of connections. A request whose reused connection the
 * server had already closed (ECONNRESET on a reused socket, before any answer: the request was
 * never read) is sent again on a fresh one — the retry Node's documentation recommends; nothing
 * else is retried, since a decision that may have been made must not be counted twice.
 */
import http from "node:http";
import https from "node:https";

const agents = { http: new http.Agent({ keepAlive: true, maxSockets: 64 }), https: new https.Agent({ keepAlive: true, maxSockets: 64 }) };

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

export function request(url: string, options: { method: "GET" | "POST"; headers?: Record<string, string>; body?: string; timeoutMs: number }): Promise<HttpAnswer> {
  const u = new URL(url);
  const lib = u.protocol === "https:" ? https : http;
  const agent = u.protocol === "https:" ? agents.https : agents.http;
  const attempt = (retried: boolean): Promise<HttpAnswer> =>
    new Promise((resolve, reject) => {
      const req = lib.request(
        u,
        { method: options.method, agent, headers: { ...options.headers, ...(options.body ? { "content-length": String(Buffer.byteLength(options.body)) } : {}) }, timeout: options.timeoutMs },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }));
          res.on("error", reject);
        },
      );
      req.on("timeout", () => req.destroy(new Error(`no answer from ${u.host} within ${options.timeoutMs} ms`)));
      req.on("error", (error: NodeJS.ErrnoException) => {
        if (!retried && req.reusedSocket && error.code === "ECONNRESET") attempt(true).then(resolve, reject);
        else reject(error);
      });
      req.end(options.body);
    });
  return attempt(false);
}
