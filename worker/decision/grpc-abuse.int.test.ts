/**
 * Abusive gRPC clients against a real decision server process (#30.3, #30.5, the reset risk), each
 * with its bound on memory or CPU measured from /proc and asserted:
 *
 * - held streams: 3,000 from one unauthenticated client on one connection (refused from their
 *   headers, none held; RSS within 50 MB of idle), and 3,000 authenticated ones holding half a
 *   message (30 connections × the 100-stream limit), closed at the call timeout (under 25 KB each);
 * - byte-per-frame messages: ~64 KiB sent as 1-byte DATA frames costs the server about what a plain
 *   node:http2 server that reads the same message costs (a ratio, generous), and an
 *   unauthenticated one is refused before any of its bytes are read;
 * - stream floods: 10,000 calls (and 10,000 opened-and-reset streams) cost a bounded CPU per stream;
 * - resets: calls the client resets with their message are not decided;
 * - numbers that wrap: a request `hits_addend` of 2^64−1 is INVALID_ARGUMENT, not a cost of 0.
 *
 * The client is test/h2-raw.ts, which writes frames itself (node:http2 and grpc-js would never
 * send most of this). Two servers: one with the call timeout lowered to 1 s
 * (SLUICE_GRPC_CALL_TIMEOUT_MS), so the held streams wait no longer than that; one with a timeout
 * far longer than any test, so what the others measure is never cut short by it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnDecisionServer, type SpawnedServer } from "../../lib/processes/harness";
import { compileFixture, writeFixturePolicy } from "../../lib/decision/testing/fixture";
import { rlsServiceDefinition } from "../../lib/rls/protos";
import { grpcPrefix, RawH2, type RawStream } from "../../test/h2-raw";
import { testRedisPrefix, testRedisUrl } from "../../test/helpers";

const TOKEN = "svc_grpc_abuse_0001";
const KEY = "sk_test_grpc_abuse_0001";
const CALL_TIMEOUT_MS = 1_000;
const LONG_TIMEOUT_MS = 120_000;
const MAX_STREAMS = 100;
const FLOOD_STREAMS = 10_000;
const PATH = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";
const MB = 1024 * 1024;
const mb = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;

/** The call timeout lowered to CALL_TIMEOUT_MS, for the held streams that should meet it. */
let held: SpawnedServer;
/** A call timeout far longer than any test here, so what it measures is never cut by the timeout. */
let server: SpawnedServer;
let redis: Redis;
let idleRssBytes = 0;

/** Resident memory of a process (VmRSS). */
function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(match?.[1] ?? 0) * 1024;
}

/** CPU time a process has used, user + system (clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Samples RSS every 20 ms while `work` runs; resolves to the work's result and the peak. */
async function peakRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; peakBytes: number }> {
  let peakBytes = rssBytes(pid);
  const timer = setInterval(() => (peakBytes = Math.max(peakBytes, rssBytes(pid))), 20);
  try {
    const result = await work();
    peakBytes = Math.max(peakBytes, rssBytes(pid));
    return { result, peakBytes };
  } finally {
    clearInterval(timer);
  }
}

const grpcHeaders = (address: string, token?: string): Record<string, string> => ({
  ":method": "POST",
  ":scheme": "http",
  ":path": PATH,
  ":authority": address,
  "content-type": "application/grpc",
  te: "trailers",
  ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
});

const REQUEST = rlsServiceDefinition().ShouldRateLimit!.requestSerialize({
  domain: "sluice",
  descriptors: [{ entries: [{ key: "api_key", value: KEY }, { key: "operation", value: "orders-read" }] }],
});
const FRAMED_REQUEST = Buffer.concat([grpcPrefix(REQUEST.length), REQUEST]);

async function decisions(): Promise<number> {
  const text = await fetch(`${server.url}/metrics`).then((r) => r.text());
  let total = 0;
  for (const m of text.matchAll(/^sluice_decisions_total\{[^}]*\} (\d+)/gm)) total += Number(m[1]);
  return total;
}

/** A plain node:http2 server in a process of its own: reads each request to its end (chunks, one concat), answers grpc-status 0. */
function startBaseline(): Promise<{ child: ChildProcess; address: string }> {
  const script = `
    const http2 = require("node:http2");
    const server = http2.createServer();
    server.on("stream", (stream) => {
      const chunks = [];
      stream.on("error", () => {});
      stream.on("data", (c) => chunks.push(c));
      stream.on("end", () => {
        const body = Buffer.concat(chunks);
        stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": body.length > 0 ? "0" : "12" }, { endStream: true });
      });
    });
    server.listen(0, "127.0.0.1", () => console.log("PORT " + server.address().port));`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      const port = /PORT (\d+)/.exec(d.toString())?.[1];
      if (port) resolve({ child, address: `127.0.0.1:${port}` });
    });
    child.once("exit", (code) => reject(new Error(`baseline exited ${code}`)));
  });
}

/** REQUEST grown to `messageBytes` with an unknown bytes field (15), which a decoder skips: still one decision. */
function paddedRequest(messageBytes: number): Buffer {
  const padBytes = messageBytes - REQUEST.length - 4;
  const field = Buffer.from([0x7a, 0x80 | (padBytes & 0x7f), 0x80 | ((padBytes >> 7) & 0x7f), padBytes >> 14]);
  return Buffer.concat([REQUEST, field, Buffer.alloc(padBytes, 0x61)]);
}

/** Sends one message of `messageBytes` as 1-byte DATA frames on a fresh connection; resolves when the server closed the stream. */
async function bytePerFrame(address: string, messageBytes: number, token: string | undefined): Promise<void> {
  const raw = await RawH2.connect(address);
  try {
    const stream = raw.open(grpcHeaders(address, token));
    const message = paddedRequest(messageBytes);
    // Under the 65,535-byte windows, so the client needs no WINDOW_UPDATE.
    raw.data(stream.id, Buffer.concat([grpcPrefix(message.length), message]), 1, true);
    await stream.closed;
  } finally {
    raw.close();
  }
}

beforeAll(async () => {
  const prefix = `${testRedisPrefix()}abuse:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  redis = new Redis(testRedisUrl());
  await writeFixturePolicy(
    redis,
    compileFixture({
      version: 1,
      operations: [{ name: "orders-read", match: ["GET /v1/orders"] }],
      tiers: [{ name: "big", limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 1_000_000_000, window: "1h" }] }],
      globalCaps: [],
      tenants: [{ slug: "abuse", name: "Abuse", tier: "big", keys: [{ name: "k", key: KEY }] }],
    }),
  );
  const env = { REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: TOKEN, SLUICE_GRPC_MAX_STREAMS: String(MAX_STREAMS) };
  [held, server] = await Promise.all([
    spawnDecisionServer({ ...env, SLUICE_GRPC_CALL_TIMEOUT_MS: String(CALL_TIMEOUT_MS) }, { waitReady: true }),
    spawnDecisionServer({ ...env, SLUICE_GRPC_CALL_TIMEOUT_MS: String(LONG_TIMEOUT_MS) }, { waitReady: true }),
  ]);
  // Warm the gRPC path, then take the idle footprint.
  const session = http2.connect(`http://${server.grpcAddress}`);
  for (let i = 0; i < 50; i++) {
    await new Promise<void>((resolve) => {
      const s = session.request({ ":method": "POST", ":path": PATH, "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${TOKEN}` });
      s.on("data", () => undefined);
      s.on("error", () => undefined);
      s.on("close", () => resolve());
      s.end(FRAMED_REQUEST);
    });
  }
  session.close();
  idleRssBytes = rssBytes(server.child.pid!);
}, 120_000);

afterAll(async () => {
  await held?.stop();
  await server?.stop();
  redis?.disconnect();
});

describe("abusive gRPC clients (real decision server)", () => {
  it("3,000 streams held by one unauthenticated client on one connection: refused from their headers, none held, RSS within 50 MB of idle", async () => {
    const pid = server.child.pid!;
    const raw = await RawH2.connect(server.grpcAddress);
    const beforeBytes = rssBytes(pid);
    const started = performance.now();
    const { result: ends, peakBytes } = await peakRss(pid, async () => {
      const streams: RawStream[] = [];
      raw.batch(() => {
        for (let i = 0; i < 3_000; i++) {
          const stream = raw.open(grpcHeaders(server.grpcAddress));
          // The start of a 60 KiB message, never finished.
          raw.data(stream.id, Buffer.concat([grpcPrefix(60 * 1024), Buffer.alloc(1024)]), 1024, false);
          streams.push(stream);
        }
      });
      return Promise.all(streams.map((s) => s.closed));
    });
    raw.close();
    const lastMs = Math.max(...ends.map((e) => e.atMs)) - started;
    const kinds = ends.reduce<Record<string, number>>((n, e) => ((n[e.kind === "reset" ? `reset ${e.code}` : e.kind] = (n[e.kind === "reset" ? `reset ${e.code}` : e.kind] ?? 0) + 1), n), {});
    console.log(`unauthenticated held streams: 3000 closed in ${lastMs.toFixed(0)} ms (${JSON.stringify(kinds)}); RSS idle ${mb(idleRssBytes)}, before ${mb(beforeBytes)}, peak ${mb(peakBytes)}`);
    expect(ends).toHaveLength(3_000);
    // None is held: this server's call timeout is 120 s, and every stream is closed long before it
    // (refused from its headers; past the stream limit, by HTTP/2). Before #30.3 none was closed.
    expect(lastMs).toBeLessThan(LONG_TIMEOUT_MS / 4);
    expect(peakBytes - idleRssBytes).toBeLessThan(50 * MB);
    expect(server.child.exitCode).toBeNull();
  });

  it("3,000 authenticated streams holding half a message (30 connections × 100): closed at the call timeout, RSS under 25 KB per held stream", async () => {
    const pid = held.child.pid!;
    const connections = await Promise.all(Array.from({ length: 30 }, () => RawH2.connect(held.grpcAddress)));
    const beforeBytes = rssBytes(pid);
    const started = performance.now();
    const { result: ends, peakBytes } = await peakRss(pid, async () => {
      const streams: RawStream[] = [];
      for (const raw of connections) {
        raw.batch(() => {
          for (let i = 0; i < MAX_STREAMS; i++) {
            const stream = raw.open(grpcHeaders(held.grpcAddress, TOKEN));
            raw.data(stream.id, Buffer.concat([grpcPrefix(1_000), Buffer.alloc(500)]), 1_000, false);
            streams.push(stream);
          }
        });
      }
      return Promise.all(streams.map((s) => s.closed));
    });
    for (const raw of connections) raw.close();
    const firstMs = Math.min(...ends.map((e) => e.atMs)) - started;
    const lastMs = Math.max(...ends.map((e) => e.atMs)) - started;
    console.log(`authenticated held streams: 3000 closed between ${firstMs.toFixed(0)} and ${lastMs.toFixed(0)} ms (call timeout ${CALL_TIMEOUT_MS} ms); RSS before ${mb(beforeBytes)}, peak ${mb(peakBytes)}`);
    // Every one was held (none refused early), and the server ended each itself.
    expect(ends.every((e) => e.kind === "ended" || (e.kind === "reset" && e.code === 0))).toBe(true);
    expect(firstMs).toBeGreaterThanOrEqual(CALL_TIMEOUT_MS - 50);
    // The timeout, one sweep, and slack for a loaded machine.
    // The timeout, one sweep, and slack for a loaded machine (3,000 answers at once, on a shared
    // 2-core box); before #30.3 they were never closed.
    expect(lastMs).toBeLessThan(CALL_TIMEOUT_MS + 10_000);
    // Each held stream costs node:http2's own stream state and no more than its 1,000 announced
    // bytes here: under 25 KB per stream, garbage included (50 MB for 2,000 streams).
    expect(peakBytes - beforeBytes).toBeLessThan(3_000 * 25 * 1024);
  });

  it("a message sent as 1-byte frames costs about what a plain node:http2 server pays; unauthenticated, it is refused before one byte is read", async () => {
    const baseline = await startBaseline();
    try {
      const messageBytes = 65_000;
      const rounds = 2;
      const pid = server.child.pid!;
      const basePid = baseline.child.pid!;
      // Warm both (JIT), then measure each the same way.
      await bytePerFrame(baseline.address, 1_000, undefined);
      await bytePerFrame(server.grpcAddress, 1_000, TOKEN);
      expect(paddedRequest(messageBytes).length).toBe(messageBytes);
      let before = cpuMs(basePid);
      for (let i = 0; i < rounds; i++) await bytePerFrame(baseline.address, messageBytes, undefined);
      const baselineMs = cpuMs(basePid) - before;
      before = cpuMs(pid);
      const decided = await decisions();
      for (let i = 0; i < rounds; i++) await bytePerFrame(server.grpcAddress, messageBytes, TOKEN);
      const sluiceMs = cpuMs(pid) - before;
      // Each was read whole and decided (not cut by a limit).
      expect((await decisions()) - decided).toBe(rounds);
      before = cpuMs(pid);
      for (let i = 0; i < rounds; i++) await bytePerFrame(server.grpcAddress, messageBytes, undefined);
      const refusedMs = cpuMs(pid) - before;
      console.log(`byte-per-frame (${rounds} × ${messageBytes} B): plain node:http2 ${baselineMs} ms CPU, Sluice authenticated ${sluiceMs} ms, unauthenticated ${refusedMs} ms`);
      // Gathering by concatenation cost 3.6× the plain server at 64 KiB (#30.5), and grows with n².
      expect(sluiceMs).toBeLessThanOrEqual(Math.max(2 * baselineMs, 100));
      expect(refusedMs).toBeLessThanOrEqual(Math.max(baselineMs, 100));

      // Refused from the headers: the answer comes before any DATA is sent.
      const raw = await RawH2.connect(server.grpcAddress);
      const stream = raw.open(grpcHeaders(server.grpcAddress));
      expect((await stream.closed).kind).toBe("ended");
      raw.close();
    } finally {
      baseline.child.kill();
    }
  });

  it("a flood of 10,000 unauthenticated calls, and of opened-and-reset streams, costs a bounded CPU per stream and bounded memory", async () => {
    const pid = server.child.pid!;
    /** Batches of 100 streams (the stream limit), each answered or reset before the next. */
    const flood = async (reset: boolean) => {
      const raw = await RawH2.connect(server.grpcAddress);
      const streams: RawStream[] = [];
      for (let batch = 0; batch < FLOOD_STREAMS / MAX_STREAMS && !raw.destroyed; batch++) {
        raw.batch(() => {
          for (let i = 0; i < MAX_STREAMS; i++) {
            const stream = raw.open(grpcHeaders(server.grpcAddress), !reset);
            if (reset) raw.reset(stream.id);
            else streams.push(stream);
          }
        });
        if (reset) await raw.flushed();
        else await Promise.all(streams.splice(0).map((s) => s.closed));
      }
      await raw.flushed();
      const goaway = raw.goaway;
      raw.close();
      return goaway;
    };
    for (const reset of [false, true]) {
      const beforeBytes = rssBytes(pid);
      const before = cpuMs(pid);
      const started = performance.now();
      const { result: goaway, peakBytes } = await peakRss(pid, () => flood(reset));
      const usedMs = cpuMs(pid) - before;
      console.log(
        `flood (${reset ? "opened and reset" : "unauthenticated calls"}): ${FLOOD_STREAMS} streams in ${(performance.now() - started).toFixed(0)} ms, server CPU ${usedMs} ms (${((usedMs * 1000) / FLOOD_STREAMS).toFixed(1)} µs/stream), GOAWAY ${goaway ?? "none"}, RSS before ${mb(beforeBytes)}, peak ${mb(peakBytes)}`,
      );
      // node:http2 alone spends tens of µs per stream; 250 µs is generous for a loaded machine.
      expect((usedMs * 1000) / FLOOD_STREAMS).toBeLessThan(250);
      // Nothing is retained per stream; what RSS shows is young-generation garbage, which
      // --max-semi-space-size=64 (the decision server's flag) lets grow to ~3 × 64 MB before it is collected.
      expect(peakBytes - beforeBytes).toBeLessThan(200 * MB);
    }
    expect(server.child.exitCode).toBeNull();
  });

  it("calls reset with their message are not decided: 2,000 resets, at most a few decisions", async () => {
    const before = await decisions();
    // 40 connections, each 50 calls sent and reset in one write, then one call that is not reset
    // (decided: it also shows the server read the resets before it, on the same connection).
    for (let c = 0; c < 40; c++) {
      const raw = await RawH2.connect(server.grpcAddress);
      raw.batch(() => {
        for (let i = 0; i < 50; i++) {
          const stream = raw.open(grpcHeaders(server.grpcAddress, TOKEN));
          raw.data(stream.id, FRAMED_REQUEST, 16_384, true);
          raw.reset(stream.id);
        }
      });
      await raw.flushed();
      const last = raw.open(grpcHeaders(server.grpcAddress, TOKEN));
      raw.data(last.id, FRAMED_REQUEST, 16_384, true);
      expect((await last.closed).kind).toBe("ended");
      raw.close();
    }
    // Decisions are counted when the store answers: give the last ones a moment.
    await new Promise((r) => setTimeout(r, 200));
    const decided = (await decisions()) - before;
    console.log(`resets: 2000 calls reset with their message, ${decided - 40} decided (40 calls not reset)`);
    expect(decided).toBeGreaterThanOrEqual(40);
    // Before the fix: 762 of 5,000 (#30). A reset read after the call was handed over may still be decided.
    expect(decided - 40).toBeLessThanOrEqual(40);
  });

  it("refuses a request hits_addend above uint32 (2^64−1 used to be read as 0 and charged as 1) with INVALID_ARGUMENT, and decides nothing", async () => {
    const before = await decisions();
    const client = new grpc.Client(server.grpcAddress, grpc.credentials.createInsecure());
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${TOKEN}`);
    const send = (hitsAddend: number[]) =>
      new Promise<grpc.ServiceError | null>((resolve) =>
        client.makeUnaryRequest(PATH, (b: Buffer) => b, (b: Buffer) => b, Buffer.concat([REQUEST, Buffer.from([0x18, ...hitsAddend])]), metadata, { deadline: Date.now() + 5_000 }, (error) => resolve(error)),
      );
    try {
      const wrapped = await send([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
      expect(wrapped?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(wrapped?.details).toMatch(/hits_addend: a varint above 4294967295/);
      expect((await send([0x80, 0x80, 0x80, 0x80, 0x10]))?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(await decisions()).toBe(before);
      // 2^32−1 is a uint32: read exactly, then refused by the decision's own bound on a cost.
      expect((await send([0xff, 0xff, 0xff, 0xff, 0x0f]))?.details).toMatch(/^hits_addend: expected an integer ≤/);
    } finally {
      client.close();
    }
  });
});
