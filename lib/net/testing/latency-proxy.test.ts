/**
 * The latency proxy of the region tests and bench:regions (lib/net/testing/latency-proxy.ts), on a
 * loopback echo server: a round trip through it takes twice the latency, chunks keep their order,
 * a cut resets open connections and refuses new ones, a stall keeps them open and silent, and heal
 * lets them through again.
 */
import { createServer, Socket, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../ports";
import { startLatencyProxy, type LatencyProxy } from "./latency-proxy";

let echo: Server;
let echoPort: number;
let proxy: LatencyProxy;

beforeAll(async () => {
  echoPort = await freePort();
  echo = createServer((s) => {
    s.on("error", () => undefined); // the proxy resets its side on cut()
    s.pipe(s);
  });
  await new Promise<void>((resolve) => echo.listen(echoPort, "127.0.0.1", () => resolve()));
  proxy = await startLatencyProxy({ targetPort: echoPort, latencyMs: 60 });
});
afterAll(async () => {
  await proxy.close();
  await new Promise<void>((resolve) => echo.close(() => resolve()));
});

function connect(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = new Socket();
    s.once("error", reject);
    s.connect(port, "127.0.0.1", () => resolve(s));
  });
}

/** Writes `text` and resolves with the ms until `text.length` bytes came back. */
function roundTrip(s: Socket, text: string): Promise<{ ms: number; echoed: string }> {
  return new Promise((resolve, reject) => {
    const sent = performance.now();
    let echoed = "";
    const onData = (d: Buffer) => {
      echoed += d.toString();
      if (echoed.length >= text.length) {
        s.off("data", onData);
        resolve({ ms: performance.now() - sent, echoed });
      }
    };
    s.on("data", onData);
    s.once("error", reject);
    s.write(text);
  });
}

/** Resolves with how the socket ended: "closed" (reset or closed by the other side) or "open" after `ms`. */
function endsWithin(s: Socket, ms: number): Promise<"closed" | "open"> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve("open"), ms);
    s.once("close", () => {
      clearTimeout(timer);
      resolve("closed");
    });
    s.on("error", () => undefined);
  });
}

describe("the latency proxy", () => {
  it("delays each direction by the latency and keeps the order of chunks", async () => {
    const s = await connect(proxy.port);
    const { ms, echoed } = await roundTrip(s, "hello");
    expect(echoed).toBe("hello");
    expect(ms).toBeGreaterThanOrEqual(115); // 2 × 60 ms, less a timer's early millisecond or two
    expect(ms).toBeLessThan(1_000);
    // Many chunks with jitter: every byte back, in order.
    proxy.setLatency(20, 30);
    const text = Array.from({ length: 50 }, (_, i) => `${i},`).join("");
    for (let i = 0; i < 50; i++) s.write(`${i},`);
    const back = await new Promise<string>((resolve) => {
      let got = "";
      s.on("data", (d: Buffer) => {
        got += d.toString();
        if (got.length >= text.length) resolve(got);
      });
    });
    expect(back).toBe(text);
    proxy.setLatency(60);
    s.destroy();
  });

  it("cut() resets open connections and refuses new ones; heal() lets them through", async () => {
    const s = await connect(proxy.port);
    await roundTrip(s, "x");
    expect(proxy.connections()).toBeGreaterThanOrEqual(1);
    const ended = endsWithin(s, 2_000);
    proxy.cut();
    expect(await ended).toBe("closed");
    // A new connection is accepted by the kernel, then reset at once (before or just after connect's callback).
    const refused = new Socket();
    const outcome = endsWithin(refused, 2_000);
    refused.connect(proxy.port, "127.0.0.1");
    expect(await outcome).toBe("closed");

    proxy.heal();
    const again = await connect(proxy.port);
    const { echoed } = await roundTrip(again, "back");
    expect(echoed).toBe("back");
    again.destroy();
  });

  it("stall() keeps connections open but silent; heal() resets them and lets new ones through", async () => {
    const s = await connect(proxy.port);
    await roundTrip(s, "x");
    proxy.stall();
    const ended = endsWithin(s, 2_000);
    let got = "";
    s.on("data", (d: Buffer) => (got += d.toString()));
    s.write("lost");
    const late = await connect(proxy.port); // accepted, and silent too
    late.on("error", () => undefined); // reset by heal()
    late.on("data", (d: Buffer) => (got += d.toString()));
    late.write("lost too");
    await new Promise((r) => setTimeout(r, 400));
    expect(got).toBe("");
    expect(proxy.connections()).toBeGreaterThanOrEqual(2);

    proxy.heal();
    expect(await ended).toBe("closed");
    const again = await connect(proxy.port);
    const { echoed } = await roundTrip(again, "back");
    expect(echoed).toBe("back");
    again.destroy();
    late.destroy();
  });
});
