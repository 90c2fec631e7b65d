/**
 * A TCP proxy that makes a loopback link behave like one across regions, for tests and benchmarks
 * (docs/regions.md#what-is-measured): every chunk, in each direction, is delivered `latencyMs`
 * (plus up to `jitterMs`, uniformly) after it arrived, in order. `cut()` drops every open connection
 * and refuses new ones (each is reset as soon as it is accepted); `stall()` is a silent partition:
 * connections stay open and new ones are accepted, but nothing gets through either way; `heal()`
 * lets them through again (ending a stall by resetting the stalled connections: what they lost
 * mid-stream would garble any protocol, so their clients reconnect).
 * Listens on 127.0.0.1 on a free port; `close()` stops it. Not for production: no backpressure (a
 * slow reader makes the proxy buffer), which is what a test of a few thousand messages needs.
 */
import { createServer, Socket, type Server } from "node:net";
import { freePort } from "../ports";

export interface LatencyProxyOptions {
  /** Where to forward: the target's port on 127.0.0.1 (or `host`). */
  targetPort: number;
  targetHost?: string;
  /** One-way delay added to every chunk, ms. */
  latencyMs: number;
  /** Up to this much more, uniformly at random per chunk (order is kept: a chunk never overtakes the one before it). */
  jitterMs?: number;
}

export interface LatencyProxy {
  port: number;
  /** `<scheme>://127.0.0.1:<port>`: the URL to give a client instead of the target's. */
  url(scheme: string): string;
  /** Changes the delay of chunks that arrive from now on. */
  setLatency(latencyMs: number, jitterMs?: number): void;
  /** Drops every open connection (reset) and refuses new ones until heal(). */
  cut(): void;
  /** Keeps every connection open but delivers nothing either way, new connections too, until heal(): a partition that sends no reset. */
  stall(): void;
  heal(): void;
  /** Connections open now (both sides connected). */
  connections(): number;
  close(): Promise<void>;
}

/**
 * One direction of a connection: chunks delivered at arrival + delay, never before the previous one.
 * One queue and one timer per direction (timers of different durations may fire out of order).
 */
function delayedPipe(from: Socket, to: Socket, delayOf: () => number, stalled: () => boolean): void {
  const queue: { dueMs: number; chunk: Buffer | null }[] = [];
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    timer = null;
    while (queue.length > 0 && queue[0]!.dueMs <= Date.now()) {
      const { chunk } = queue.shift()!;
      if (to.destroyed) continue;
      if (chunk === null) to.end();
      else to.write(chunk);
    }
    if (queue.length > 0) timer = setTimeout(flush, queue[0]!.dueMs - Date.now());
  };
  const push = (chunk: Buffer | null) => {
    const last = queue.at(-1)?.dueMs ?? 0;
    queue.push({ dueMs: Math.max(Date.now() + delayOf(), last), chunk });
    if (timer === null) timer = setTimeout(flush, queue[0]!.dueMs - Date.now());
  };
  from.on("data", (chunk: Buffer) => {
    if (!stalled()) push(chunk);
  });
  // The end (FIN) follows the last chunk, delayed as the chunks are.
  from.on("end", () => push(null));
}

export async function startLatencyProxy(options: LatencyProxyOptions): Promise<LatencyProxy> {
  let latencyMs = options.latencyMs;
  let jitterMs = options.jitterMs ?? 0;
  let isCut = false;
  let isStalled = false;
  const open = new Set<Socket>();
  const delayOf = () => latencyMs + (jitterMs > 0 ? Math.random() * jitterMs : 0);

  const server: Server = createServer((client) => {
    if (isCut) {
      client.resetAndDestroy();
      return;
    }
    const upstream = new Socket();
    open.add(client);
    open.add(upstream);
    const drop = () => {
      open.delete(client);
      open.delete(upstream);
      if (!client.destroyed) client.destroy();
      if (!upstream.destroyed) upstream.destroy();
    };
    client.on("error", drop);
    upstream.on("error", drop);
    // A side that closed still has chunks in flight toward the other: drop once they are delivered.
    const dropLater = () => setTimeout(drop, latencyMs + jitterMs + 10);
    client.on("close", dropLater);
    upstream.on("close", dropLater);
    const stalled = () => isStalled;
    delayedPipe(client, upstream, delayOf, stalled);
    delayedPipe(upstream, client, delayOf, stalled);
    upstream.connect(options.targetPort, options.targetHost ?? "127.0.0.1");
  });
  const port = await freePort();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });

  return {
    port,
    url: (scheme) => `${scheme}://127.0.0.1:${port}`,
    setLatency(ms, jitter = 0) {
      latencyMs = ms;
      jitterMs = jitter;
    },
    cut() {
      isCut = true;
      for (const s of open) s.resetAndDestroy();
      open.clear();
    },
    stall() {
      isStalled = true;
    },
    heal() {
      if (isStalled) {
        for (const s of open) s.resetAndDestroy();
        open.clear();
      }
      isCut = false;
      isStalled = false;
    },
    connections: () => open.size / 2,
    async close() {
      for (const s of open) s.destroy();
      open.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
