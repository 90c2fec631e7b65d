/**
 * What only the hand-written server has: its own clock. The behaviour both servers share is
 * lib/net/http-server.test.ts; the head grammar is http1-head.test.ts.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { HttpServer } from "./http-server";
import { idleConnection, sleep, startServer } from "./testing/raw-http";

const servers: HttpServer[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const s of servers.splice(0)) await s.drain(100);
});

describe("createHttp1Server", () => {
  it("keeps a clock per server: two servers in one process each close an idle connection after their own keep-alive timeout, not half of it", async () => {
    // Each server's sweep is a setInterval: a fake one lets seconds pass at once. The clock used to
    // be one module variable advanced by every server's sweep, so two servers counted two seconds a second.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const { port } = await startServer("http1", servers, { keepAliveTimeoutMs: 4_000 });
    await startServer("http1", servers, { keepAliveTimeoutMs: 4_000 });
    const { closed } = await idleConnection(port);
    let seconds = 0;
    for (; seconds < 8 && !closed(); seconds++) {
      vi.advanceTimersByTime(1_000);
      await sleep(10);
    }
    expect(closed()).toBe(true);
    expect(seconds).toBeGreaterThanOrEqual(4);
  });
});
