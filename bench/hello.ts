/**
 * The HTTP ceiling for the benchmark: node:http reading a JSON body and answering a small JSON,
 * nothing else. `PORT=… tsx bench/hello.ts`.
 */
import http from "node:http";

const port = Number(process.env.PORT ?? 8790);
const body = JSON.stringify({ allowed: true, status: 200, reason: "ok" });

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    try {
      if (chunks.length > 0) JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      // The ceiling parses like the others do; garbage is answered the same.
    }
    res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 5_000;
server.listen(port, "127.0.0.1", () => process.stdout.write(`hello listening on :${port}\n`));
process.once("SIGTERM", () => server.close(() => process.exit(0)));
