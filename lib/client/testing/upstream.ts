/**
 * A scripted upstream for the SDK's tests: a real node:http server that answers each request as
 * the test's script says, and records what arrived (method, path, headers, body, when).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface SeenRequest {
  n: number;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Date.now() when the request's body had arrived. */
  atMs: number;
}

export type Scripted = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | "destroy" | "hang";

export interface Upstream {
  url: string;
  seen: SeenRequest[];
  close(): Promise<void>;
}

export async function scriptedUpstream(script: (req: SeenRequest) => Scripted | Promise<Scripted>): Promise<Upstream> {
  const seen: SeenRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const entry: SeenRequest = {
        n: seen.length,
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        atMs: Date.now(),
      };
      seen.push(entry);
      void Promise.resolve(script(entry)).then(async (answer) => {
        if (answer === "destroy") return req.socket.destroy();
        if (answer === "hang") return;
        if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
        res.writeHead(answer.status, { "content-type": "text/plain", ...answer.headers });
        res.end(answer.body ?? "");
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
