/**
 * The load generator of `npm run bench`'s gRPC paths (Envoy's rate limit service protocol):
 * CONCURRENCY unary calls in flight at all times over CHANNELS HTTP/2 connections (Envoy likewise
 * multiplexes its calls to the rate limit cluster over a few connections), each call one
 * descriptor as envoy-rls.yaml builds it (api_key, remote_address, method, path).
 *
 * It speaks gRPC on node:http2 directly, with request messages encoded up front by the same Envoy
 * protos the server loads (lib/rls/protos.ts), as wrk does for HTTP: the @grpc/grpc-js client
 * costs several times the server's CPU per call, and on a 2-core machine it would measure itself.
 * Every answer is still decoded (overall_code counted) and its grpc-status read from the trailers.
 * Runs in its own process so its CPU is measured apart from the server's; prints `start` once
 * both ends are warm (the parent samples the server's CPU from then on), then one JSON line:
 * calls, errors, OVER_LIMIT answers, latency p50/p99 (ms), its own CPU (µs, process.cpuUsage)
 * and the seconds it ran.
 *
 * Environment: RLS_ADDRESS (host:port), TOKEN, SECONDS (default 6), CHANNELS (2), CONCURRENCY
 * (50), KEY_PATTERN (`bk_{i}_bench`: {i} is the key's number in base 36, {d} in decimal) with
 * KEY_COUNT (100000). ENVOY_DOMAIN: instead, descriptors of that `rateLimitService` domain as an
 * Envoy route with `generic_key` and `remote_address` actions sends them (the pattern is then the
 * client address's value).
 */
import http2 from "node:http2";
import { rlsServiceDefinition, type RlsResponseMessage } from "../lib/rls/protos";

const address = process.env.RLS_ADDRESS ?? "127.0.0.1:8081";
const seconds = Number(process.env.SECONDS ?? 6);
const channels = Number(process.env.CHANNELS ?? 2);
const concurrency = Number(process.env.CONCURRENCY ?? 50);
const keyPattern = process.env.KEY_PATTERN ?? "bk_{i}_bench";
const keyCount = Number(process.env.KEY_COUNT ?? 100_000);
const envoyDomain = process.env.ENVOY_DOMAIN;
const PATH = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";

const method = rlsServiceDefinition().ShouldRateLimit!;
/** Length-prefixed gRPC messages (flag 0, big-endian length, the message), one per key. */
const frames = Array.from({ length: keyCount }, (_, i) => {
  const key = keyPattern.replace("{i}", i.toString(36)).replace("{d}", String(i));
  const message = method.requestSerialize({
    ...(envoyDomain
      ? { domain: envoyDomain, descriptors: [{ entries: [{ key: "generic_key", value: "api" }, { key: "remote_address", value: key }] }] }
      : {
          domain: "sluice",
          descriptors: [{ entries: [{ key: "api_key", value: key }, { key: "remote_address", value: "203.0.113.7" }, { key: "method", value: "GET" }, { key: "path", value: "/v1/orders/42" }] }],
        }),
  });
  const frame = Buffer.allocUnsafe(5 + message.length);
  frame.writeUInt8(0, 0);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return frame;
});
const headers = {
  ":method": "POST",
  ":path": PATH,
  "content-type": "application/grpc",
  te: "trailers",
  authorization: `Bearer ${process.env.TOKEN ?? ""}`,
};

function connect(): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://${address}`);
    session.once("connect", () => resolve(session));
    session.once("error", reject);
  });
}

async function main(): Promise<void> {
  const sessions = await Promise.all(Array.from({ length: channels }, connect));
  const latencies: number[] = [];
  let calls = 0;
  let errors = 0;
  let overLimit = 0;
  let next = 0;
  const call = (): Promise<void> =>
    new Promise((resolve) => {
      const t0 = performance.now();
      const stream = sessions[next % sessions.length]!.request(headers);
      const frame = frames[Math.floor(Math.random() * frames.length)]!;
      next++;
      const chunks: Buffer[] = [];
      let status = "";
      stream.on("data", (d: Buffer) => chunks.push(d));
      stream.on("trailers", (t) => (status = String(t["grpc-status"] ?? "")));
      stream.on("response", (h) => {
        if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
      });
      stream.on("close", () => {
        calls++;
        latencies.push(performance.now() - t0);
        const body = Buffer.concat(chunks);
        if (status !== "0" || body.length < 5) errors++;
        else if ((method.responseDeserialize(body.subarray(5)) as RlsResponseMessage).overall_code === "OVER_LIMIT") overLimit++;
        resolve();
      });
      stream.on("error", () => undefined);
      stream.end(frame);
    });
  // Warm both ends before the clock starts.
  for (let i = 0; i < 200; i++) await call();
  calls = errors = overLimit = 0;
  latencies.length = 0;
  // The parent measures the server from this line on.
  process.stdout.write("start\n");

  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const loop = async () => {
    while (performance.now() < deadline) await call();
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsedS = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => Number((latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0).toFixed(2));
  process.stdout.write(`${JSON.stringify({ calls, errors, overLimit, p50: pct(0.5), p99: pct(0.99), cpuUs: cpu.user + cpu.system, seconds: elapsedS })}\n`);
  for (const s of sessions) s.close();
}

main().catch((error: unknown) => {
  process.stderr.write(`grpc-load: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
