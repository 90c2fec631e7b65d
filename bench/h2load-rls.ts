/**
 * The gRPC path's load for `npm run bench` (#13): h2load (Debian's nghttp2-client, a C load
 * generator like wrk) posting one framed `RateLimitRequest` per call to Sluice's rate limit
 * service, one descriptor as examples/gateways/envoy-rls.yaml builds it (api_key, remote_address,
 * method, path), CONNECTIONS calls in flight over 2 HTTP/2 connections (Envoy multiplexes its
 * calls to the rate limit cluster over a few). h2load sends one fixed body, so every call carries
 * the same client address (wrk's check.lua spreads 100k); the script's work per decision is the same.
 *
 * Prints what check.lua prints, `RESULT <calls> <duration µs> <p50 µs> <p99 µs> <errors>`, with
 * p50/p99 from h2load's per-call log and as errors the calls Sluice did not answer grpc-status OK
 * (its sluice_rls_calls_total, read from METRICS_URL before and after) plus those h2load failed.
 *
 * Environment: RLS_ADDRESS (host:port), METRICS_URL, BENCH_TOKEN, BENCH_KEY, BENCH_FIXED_IP,
 * SECONDS, CONNECTIONS (default 50); BENCH_ENVOY_DOMAIN: instead, that `rateLimitService` domain's
 * descriptor as an Envoy route with `generic_key` and `remote_address` actions sends it (#24).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { rlsServiceDefinition } from "../lib/rls/protos";

const run = promisify(execFile);
const need = (name: string) => process.env[name] ?? ((): never => { throw new Error(`${name} is required`); })();
const address = need("RLS_ADDRESS");
const metricsUrl = need("METRICS_URL");
const seconds = Number(process.env.SECONDS ?? 6);
const inFlight = Number(process.env.CONNECTIONS ?? 50);

async function notOkCalls(): Promise<number> {
  const text = await fetch(metricsUrl).then((r) => r.text());
  let sum = 0;
  for (const line of text.split("\n")) if (line.startsWith("sluice_rls_calls_total{") && !line.includes('grpc_code="OK"')) sum += Number(line.split(" ").pop());
  return sum;
}

async function main(): Promise<void> {
  const envoyDomain = process.env.BENCH_ENVOY_DOMAIN;
  const message = rlsServiceDefinition().ShouldRateLimit!.requestSerialize(
    envoyDomain
      ? { domain: envoyDomain, descriptors: [{ entries: [{ key: "generic_key", value: "api" }, { key: "remote_address", value: need("BENCH_FIXED_IP") }] }] }
      : {
          domain: "sluice",
          descriptors: [{ entries: [{ key: "api_key", value: need("BENCH_KEY") }, { key: "remote_address", value: need("BENCH_FIXED_IP") }, { key: "method", value: "GET" }, { key: "path", value: "/v1/orders" }] }],
        },
  );
  const framed = Buffer.alloc(5 + message.length);
  framed.writeUInt32BE(message.length, 1);
  message.copy(framed, 5);
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-h2load-"));
  try {
    const body = path.join(dir, "request.bin");
    const log = path.join(dir, "calls.log");
    writeFileSync(body, framed);
    const before = await notOkCalls();
    const { stdout } = await run(
      "/usr/bin/h2load",
      ["-c2", `-m${Math.ceil(inFlight / 2)}`, "-t1", `-D${seconds}`, "-d", body, "--log-file", log, "-H", "content-type: application/grpc", "-H", "te: trailers", "-H", `authorization: Bearer ${need("BENCH_TOKEN")}`, `http://${address}/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`],
      { maxBuffer: 1 << 20 },
    );
    const errors = (await notOkCalls()) - before;
    // "finished in 6.00s, 21000.00 req/s, …" and "requests: N total, N started, N done, N succeeded, N failed, …"
    const finished = /finished in ([\d.]+)(m?s)/.exec(stdout);
    const counts = /requests: .* (\d+) succeeded, (\d+) failed/.exec(stdout);
    if (!finished || !counts) throw new Error(`h2load printed no result: ${stdout}`);
    const durationUs = Number(finished[1]) * (finished[2] === "ms" ? 1e3 : 1e6);
    // One line per call: start (µs since the epoch), HTTP status, duration (µs).
    const latencies = readFileSync(log, "utf8").trim().split("\n").map((l) => Number(l.split("\t")[2])).sort((a, b) => a - b);
    const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0;
    process.stdout.write(`RESULT ${counts[1]} ${Math.round(durationUs)} ${pct(0.5)} ${pct(0.99)} ${errors + Number(counts[2])}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`h2load-rls: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
