/**
 * The gRPC ceiling for the benchmark (#13): bare node:http2 (h2c) answering every unary call with
 * one fixed framed `RateLimitResponse` (overall_code OK) and `grpc-status: 0` trailers, after
 * reading the request message — no auth, no decoding, no decision. It is to Sluice's gRPC path
 * what bench/hello.ts is to its HTTP path: what the transport alone costs on this stack, loaded by
 * the same h2load command as the gRPC rows (bench/h2load-rls.ts). gRPC on SLUICE_GRPC_PORT; PORT
 * answers bench/side-by-side.ts's HTTP/1.1 readiness probe and an empty /metrics (no call here is
 * ever not OK). `SLUICE_GRPC_PORT=… PORT=… tsx bench/h2-hello.ts`.
 */
import http from "node:http";
import http2 from "node:http2";
import { rlsServiceDefinition } from "../lib/rls/protos";

const grpcPort = Number(process.env.SLUICE_GRPC_PORT ?? 8791);
const port = Number(process.env.PORT ?? 8793);
const message = rlsServiceDefinition().ShouldRateLimit!.responseSerialize({ overallCode: "OK" });
const framed = Buffer.alloc(5 + message.length);
framed.writeUInt32BE(message.length, 1);
message.copy(framed, 5);
const HEADERS = { ":status": 200, "content-type": "application/grpc" };
const TRAILERS = { "grpc-status": "0" };

const server = http2.createServer();
server.on("stream", (stream) => {
  stream.on("error", () => undefined);
  stream.on("data", () => undefined);
  stream.on("end", () => {
    stream.respond(HEADERS, { waitForTrailers: true });
    stream.once("wantTrailers", () => stream.sendTrailers(TRAILERS));
    stream.end(framed);
  });
});
const probe = http.createServer((_req, res) => res.end(""));
server.listen(grpcPort, "127.0.0.1", () => probe.listen(port, "127.0.0.1", () => process.stdout.write(`h2 hello listening on :${grpcPort}\n`)));
process.once("SIGTERM", () => {
  probe.close();
  server.close(() => process.exit(0));
});
