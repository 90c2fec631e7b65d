/**
 * A bounded fixed-rate load generator for `npm run bench` (p99 at a fixed 5k req/s). wrk2 is not
 * packaged here, and wrk paces nothing: its `delay()` waits after each response, so a slow server
 * is simply sent less — exactly the stall a fixed-rate p99 must see (coordinated omission). This
 * client sends on a schedule instead: request i is due at start + i / rate, and its latency is
 * measured from that instant, so time spent queued behind a slow answer counts.
 *
 * Bounded: at most FIXED_CONNECTIONS keep-alive connections (default 64, one request in flight on
 * each, like a gateway's pool), and requests due while every connection is busy wait in a queue of
 * at most FIXED_QUEUE (default two seconds of requests); past it the run stops and reports the rate as not held.
 * Requests are raw HTTP/1.1 bytes built once (the bodies of bench/wrk/check.lua), answers are read
 * by Content-Length: the client's own CPU per request stays small and is the same for every target.
 *
 * Environment: FIXED_URL (http://host:port/path), FIXED_RATE (req/s, default 5000), FIXED_SECONDS
 * (default 6, the first second not counted), BENCH_TOKEN, BENCH_KEY, BENCH_ADDRESSES. Prints
 * `RESULT <requests> <durationUs> <p50Us> <p99Us> <errors>` like check.lua, plus `HELD 0|1`.
 */
import net from "node:net";

const url = new URL(process.env.FIXED_URL ?? "http://127.0.0.1:8787/v1/check");
const RATE = Number(process.env.FIXED_RATE ?? 5_000);
const SECONDS = Number(process.env.FIXED_SECONDS ?? 6);
const CONNECTIONS = Number(process.env.FIXED_CONNECTIONS ?? 64);
const QUEUE = Number(process.env.FIXED_QUEUE ?? RATE * 2);
const ADDRESSES = Number(process.env.BENCH_ADDRESSES ?? 100_000);
const WARMUP_MS = 1_000;

function request(ip: string): Buffer {
  const body = JSON.stringify({ key: process.env.BENCH_KEY ?? "", operation: "GET /v1/orders", ip });
  return Buffer.from(
    `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${process.env.BENCH_TOKEN ?? ""}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
const requests = Array.from({ length: 1_024 }, () => {
  const n = Math.floor(Math.random() * ADDRESSES);
  return request(`10.${n >> 16}.${(n >> 8) & 255}.${n & 255}`);
});

interface Conn {
  socket: net.Socket;
  busy: boolean;
  dueMs: number;
  buffer: Buffer;
}

const latenciesUs: number[] = [];
let errors = 0;
let sent = 0;
let answered = 0;
let queued = 0;
let held = true;
// Set once every connection is open.
let startMs = 0;
let endMs = 0;
const idle: Conn[] = [];
const waiting: number[] = []; // due times of requests no connection could take yet

function send(c: Conn, dueMs: number): void {
  c.busy = true;
  c.dueMs = dueMs;
  c.socket.write(requests[sent++ % requests.length]!);
}

function onAnswer(c: Conn): void {
  const now = performance.now();
  answered++;
  if (c.dueMs >= startMs + WARMUP_MS) latenciesUs.push((now - c.dueMs) * 1_000);
  c.busy = false;
  const next = waiting.shift();
  if (next !== undefined) {
    queued--;
    send(c, next);
  } else idle.push(c);
}

/** Reads whole answers off a connection (status line, headers, Content-Length bytes). */
function onData(c: Conn, chunk: Buffer): void {
  c.buffer = c.buffer.length === 0 ? chunk : Buffer.concat([c.buffer, chunk]);
  for (;;) {
    const end = c.buffer.indexOf("\r\n\r\n");
    if (end === -1) return;
    const head = c.buffer.subarray(0, end).toString("latin1");
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? "0");
    if (c.buffer.length < end + 4 + length) return;
    if (!head.startsWith("HTTP/1.1 2")) errors++;
    c.buffer = c.buffer.subarray(end + 4 + length);
    onAnswer(c);
  }
}

async function main(): Promise<void> {
  const conns = await Promise.all(
    Array.from(
      { length: CONNECTIONS },
      () =>
        new Promise<Conn>((resolve, reject) => {
          const socket = net.connect(Number(url.port), url.hostname, () => resolve(c));
          const c: Conn = { socket, busy: false, dueMs: 0, buffer: Buffer.alloc(0) };
          socket.setNoDelay(true);
          socket.on("data", (d: Buffer) => onData(c, d));
          socket.on("error", reject);
        }),
    ),
  );
  idle.push(...conns);
  startMs = performance.now() + 10;
  endMs = startMs + SECONDS * 1_000;
  let due = 0; // requests scheduled so far
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      const until = Math.min(now, endMs);
      // Every request due by now goes out (or waits for a connection), stamped with its due time.
      while (startMs + (due * 1_000) / RATE <= until) {
        const dueMs = startMs + (due * 1_000) / RATE;
        due++;
        const c = idle.pop();
        if (c) send(c, dueMs);
        else if (queued < QUEUE) {
          waiting.push(dueMs);
          queued++;
        } else {
          held = false;
        }
      }
      if (!held || (now >= endMs && answered === sent && waiting.length === 0)) return resolve();
      if (now >= endMs + 10_000) return resolve();
      // A 1 ms tick (not a busy loop: the client must not take a core from what it measures);
      // a late tick sends late, and that lateness is counted, as a slow server's would be.
      setTimeout(tick, 1);
    };
    setTimeout(tick, 1);
  });
  for (const c of conns) c.socket.destroy();
  latenciesUs.sort((a, b) => a - b);
  const pct = (p: number) => Math.round(latenciesUs[Math.min(latenciesUs.length - 1, Math.floor((latenciesUs.length * p) / 100))] ?? 0);
  const counted = latenciesUs.length;
  process.stdout.write(`RESULT ${counted} ${Math.round((SECONDS * 1_000 - WARMUP_MS) * 1_000)} ${pct(50)} ${pct(99)} ${errors}\nHELD ${held ? 1 : 0}\n`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`fixed-rate: ${String(error)}\n`);
    process.exit(1);
  },
);
