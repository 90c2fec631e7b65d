/**
 * One suite, run against both HTTP servers of lib/net/http-server.ts (the hand-written http1.ts and
 * the node:http adapter http-node.ts) over real loopback sockets: framing, keep-alive and
 * pipelining, chunked bodies, 100-continue, the limits, refusal of anything not RFC 9112, one answer
 * per request, a client that stops reading, timeouts and drain.
 *
 * Time: http1.ts judges its timeouts on its own once-a-second sweep, which a fake setInterval
 * drives (seconds pass at once); node:http judges them on timers no test clock reaches, so its
 * limits are scaled down to tenths of a second and pass in real time.
 */
import type net from "node:net";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { HTTP_SERVERS, type HttpHandler, type HttpServer, type HttpServerKind, type HttpServerOptions } from "./http-server";
import { connect, exchange, idleConnection, parseReplies, post, sleep, startServer, statuses } from "./testing/raw-http";

interface TestClock {
  /** One unit of the timeout tests, in ms of the server's limits. */
  unitMs: number;
  /** How many units late a timeout may be judged: http1 sweeps once a second; node checks every half unit, and the machine is busy. */
  slackUnits: number;
  /** The same for the keep-alive timeout: node:http waits a second more than it advertises (HTTP_SERVER_KEEP_ALIVE_TIMEOUT_BUFFER). */
  keepAliveSlackUnits: number;
  /** Before the server is created. */
  install(): void;
  /** Lets one unit pass for the server's timeouts. */
  tick(): Promise<void>;
}

const CLOCKS: Record<HttpServerKind, TestClock> = {
  http1: {
    unitMs: 1_000,
    slackUnits: 2,
    keepAliveSlackUnits: 2,
    install: () => vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] }),
    tick: async () => {
      vi.advanceTimersByTime(1_000);
      await sleep(10);
    },
  },
  node: { unitMs: 100, slackUnits: 5, keepAliveSlackUnits: 15, install: () => undefined, tick: () => sleep(100) },
};

/** Lets units pass until `done()` (at most `max`): how many passed. */
async function unitsUntil(clock: TestClock, done: () => boolean, max: number): Promise<number> {
  let units = 0;
  while (!done() && units < max) {
    await clock.tick();
    units++;
  }
  return units;
}

const servers: HttpServer[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const s of servers.splice(0)) await s.drain(100);
});

describe.each(HTTP_SERVERS)("the %s server", (kind) => {
  const clock = CLOCKS[kind];
  const u = clock.unitMs;
  /** Timeouts of 2, 4 and 2 units. */
  const timeouts = { headersTimeoutMs: 2 * u, requestTimeoutMs: 4 * u, keepAliveTimeoutMs: 2 * u };
  const start = (overrides?: Partial<HttpServerOptions>, handler?: HttpHandler) => startServer(kind, servers, overrides, handler);

  it("answers with Content-Length, Date and keep-alive, and serves several requests on one connection", async () => {
    const { port } = await start();
    const { text, closed } = await exchange(port, [post("héllo"), post("again")], { pauseMs: 20, replies: 2 });
    const replies = parseReplies(text);
    expect(replies.map((r) => r.body)).toEqual(["POST /echo?q=1 héllo", "POST /echo?q=1 again"].map((s) => Buffer.from(s).toString("latin1")));
    expect(replies[0]!.headers["content-length"]).toBe(String(Buffer.byteLength("POST /echo?q=1 héllo")));
    expect(replies[0]!.headers.date).toMatch(/GMT$/);
    expect(replies[0]!.headers["keep-alive"]).toBe("timeout=5");
    expect(replies[0]!.headers["x-host"]).toBe("t");
    expect(closed).toBe(false);
  });

  it("answers pipelined requests in the order they came, whatever order they are decided in", async () => {
    const { port } = await start({}, (ex) => {
      const n = Number(ex.body.toString());
      setTimeout(() => ex.send(200, [], `#${n}`), (5 - n) * 15);
    });
    const { text } = await exchange(port, [[1, 2, 3, 4, 5].map((n) => post(String(n))).join("")], { replies: 5 });
    expect(parseReplies(text).map((r) => r.body)).toEqual(["#1", "#2", "#3", "#4", "#5"]);
  });

  it("reads chunked bodies (extensions and trailers ignored)", async () => {
    const { port } = await start();
    const req = "POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n";
    const { text } = await exchange(port, [req, post("next")], { replies: 2 });
    expect(parseReplies(text).map((r) => r.body)).toEqual(["POST /c hello, world", "POST /echo?q=1 next"]);
  });

  it("gives the same answers however the bytes are split (property)", async () => {
    const { port } = await start();
    const stream =
      post('{"a":1}') +
      "\r\n" +
      "POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n" +
      "GET /x HTTP/1.1\r\nHost: t\r\n\r\n" +
      post("");
    const expected = ['POST /echo?q=1 {"a":1}', "POST /c abcde", "GET /x ", "POST /echo?q=1 "];
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 12 }), async (cuts) => {
        const points = [0, ...cuts.sort((a, b) => a - b), stream.length];
        const chunks = points.slice(1).map((end, i) => stream.slice(points[i], end));
        const { text } = await exchange(port, chunks, { pauseMs: 1, settleMs: 2_000, replies: expected.length });
        expect(parseReplies(text).map((r) => r.body)).toEqual(expected);
      }),
      { numRuns: 30 },
    );
  });

  it("answers Expect: 100-continue with 100 Continue, then the answer; another expectation is 417", async () => {
    const { port } = await start();
    const continued = await exchange(port, ["POST /e HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n", "abc"], { pauseMs: 30, replies: 2 });
    expect(parseReplies(continued.text).map((r) => [r.status, r.body])).toEqual([
      [100, ""],
      [200, "POST /e abc"],
    ]);
    const refused = await exchange(port, ["POST /e HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nExpect: something\r\n\r\nabc"]);
    expect(parseReplies(refused.text)[0]!.status).toBe(417);
    expect(refused.closed).toBe(true);
  });

  it("refuses a declared body over the limit with 413 without running the handler, and closes", async () => {
    let ran = 0;
    const { port } = await start({ maxBodyBytes: 10 }, (ex) => {
      ran++;
      ex.send(200, [], "ran");
    });
    const { text, closed } = await exchange(port, [post("x".repeat(11))]);
    expect(parseReplies(text).map((r) => [r.status, r.body])).toEqual([[413, '{"error":"body_too_large"}']]);
    expect(parseReplies(text)[0]!.headers.connection).toBe("close");
    expect(closed).toBe(true);
    const chunked = await exchange(port, ["POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nabcdef\r\n0\r\n\r\n"]);
    expect(statuses(chunked.text)).toEqual([413]);
    expect(ran).toBe(0);
  });

  it("skips the body of a request answered from its head, and keeps the connection when the body is small", async () => {
    const { port } = await start({
      route: (ex) => {
        if (ex.path === "/no") {
          ex.send(404, [], "none");
          return null;
        }
        return (e) => e.send(200, [], e.body.toString());
      },
    });
    const small = await exchange(port, [post("skipped").replace("/echo?q=1", "/no") + post("kept")], { replies: 2 });
    expect(parseReplies(small.text).map((r) => [r.status, r.body])).toEqual([
      [404, "none"],
      [200, "kept"],
    ]);
    const big = await exchange(port, [post("x".repeat(70_000)).replace("/echo?q=1", "/no")]);
    expect(parseReplies(big.text).map((r) => [r.status, r.headers.connection])).toEqual([[404, "close"]]);
    expect(big.closed).toBe(true);
  });

  it("answers 431 to a head over the limit", async () => {
    const { port } = await start();
    const { text, closed } = await exchange(port, [`GET / HTTP/1.1\r\nHost: t\r\nX-Big: ${"a".repeat(17_000)}\r\n\r\n`]);
    expect(statuses(text)).toEqual([431]);
    expect(closed).toBe(true);
  });

  it("answers 431 to more header lines than the limit, never dropping one (a Content-Length past it would frame a hidden request)", async () => {
    const requests: string[] = [];
    const { port } = await start({}, (ex) => {
      requests.push(ex.url);
      ex.send(200, [], "ran");
    });
    const hidden = "GET /hidden HTTP/1.1\r\nHost: t\r\n\r\n";
    const smuggler = `POST /a HTTP/1.1\r\nHost: t\r\n${"X-F: 1\r\n".repeat(99)}Content-Length: ${hidden.length}\r\n\r\n${hidden}`;
    const refused = await exchange(port, [smuggler]);
    expect(statuses(refused.text)).toEqual([431]);
    expect(refused.closed).toBe(true);
    expect(requests).toEqual([]);
    // Exactly the limit (Host and 99 more) is a request like any other.
    const atLimit = await exchange(port, [`GET /ok HTTP/1.1\r\nHost: t\r\n${"X-F: 1\r\n".repeat(99)}\r\n`], { replies: 1 });
    expect(statuses(atLimit.text)).toEqual([200]);
    expect(requests).toEqual(["/ok"]);
  });

  it.each([
    ["a bad request line", "GARBAGE / HTTP/9.9\r\n\u0000\u0001\r\n\r\n"],
    ["a space before the colon", "GET / HTTP/1.1\r\nHost : t\r\n\r\n"],
    ["obs-fold", "GET / HTTP/1.1\r\nHost: t\r\nX: a\r\n b\r\n\r\n"],
    ["Content-Length and Transfer-Encoding", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"],
    ["two Content-Lengths", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc"],
    ["a signed Content-Length", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: +3\r\n\r\nabc"],
    ["a transfer coding other than chunked", "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n"],
    ["a bad chunk size", "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"],
    ["chunk data without its CRLF", "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n"],
    ["HTTP/1.1 without Host", "GET / HTTP/1.1\r\nX: y\r\n\r\n"],
  ])("answers 400 and closes on %s", async (_what, raw) => {
    let ran = 0;
    const { port } = await start({}, (ex) => {
      ran++;
      ex.send(200, [], "ran");
    });
    const { text, closed } = await exchange(port, [raw]);
    expect(parseReplies(text).map((r) => [r.status, r.body])).toEqual([[400, '{"error":"malformed"}']]);
    expect(closed).toBe(true);
    expect(ran).toBe(0);
  });

  it("refuses a broken request line before the head ends", async () => {
    const { port } = await start();
    const { text, closed } = await exchange(port, ["NOT HTTP AT ALL\r\nX: partial"]);
    expect(statuses(text)).toEqual([400]);
    expect(closed).toBe(true);
  });

  it("HTTP/1.0 closes after the answer unless it asks for keep-alive", async () => {
    const { port } = await start();
    const plain = await exchange(port, ["GET /a HTTP/1.0\r\n\r\n"]);
    expect(parseReplies(plain.text)[0]!.headers.connection).toBe("close");
    expect(plain.closed).toBe(true);
    const kept = await exchange(port, ["GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n"]);
    expect(parseReplies(kept.text).map((r) => [r.body, r.headers.connection])).toEqual([
      ["GET /a ", "keep-alive"],
      ["GET /b ", "close"],
    ]);
  });

  it("Connection: close is honoured, later bytes ignored", async () => {
    const { port } = await start();
    const { text, closed } = await exchange(port, [`${post("one", "Connection: close\r\n")}${post("two")}`]);
    expect(parseReplies(text).map((r) => r.body)).toEqual(["POST /echo?q=1 one"]);
    expect(closed).toBe(true);
  });

  it("HEAD answers carry the length and no body", async () => {
    const { port } = await start();
    const { text } = await exchange(port, ["HEAD /h HTTP/1.1\r\nHost: t\r\n\r\nGET /g HTTP/1.1\r\nHost: t\r\n\r\n"]);
    const head = parseReplies(text, true)[0]!;
    expect(head.headers["content-length"]).toBe(String("HEAD /h ".length));
    expect(text.slice(text.indexOf("\r\n\r\n") + 4).startsWith("HTTP/1.1 200")).toBe(true);
  });

  it("a handler that throws or rejects goes to handlerError; the server keeps serving", async () => {
    let n = 0;
    const { port, errors } = await start({}, (ex) => {
      n++;
      if (n === 1) throw new Error("sync");
      if (n === 2) return Promise.reject(new Error("async"));
      ex.send(200, [], "fine");
    });
    const { text } = await exchange(port, [post("a"), post("b"), post("c")], { pauseMs: 20, replies: 3 });
    expect(statuses(text)).toEqual([500, 500, 200]);
    expect(errors.map((e) => (e as Error).message)).toEqual(["sync", "async"]);
  });

  it("never writes a header value with a line break (response splitting)", async () => {
    const { port, errors } = await start({}, (ex) => ex.send(200, ["X-Evil", "a\r\nSet-Cookie: x=1"], "no"));
    const { text } = await exchange(port, [post("a")]);
    expect(statuses(text)).toEqual([500]);
    expect(text).not.toContain("Set-Cookie");
    expect(errors.length).toBe(1);
  });

  describe("one answer per request", () => {
    const refusedFromHead: Partial<HttpServerOptions> = {
      route: (ex) => {
        ex.send(401, [], "no");
        return null;
      },
    };
    it.each([
      ["turns out malformed", ["POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", "zz\r\n"]],
      ["goes over the body limit", ["POST /a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", "400\r\n", "x".repeat(1024), "\r\n400\r\n", "x".repeat(1024), "\r\n"]],
    ])("a request answered from its head whose skipped body %s gets that answer only", async (_what, chunks) => {
      const { port } = await start({ ...refusedFromHead, maxBodyBytes: 1500 });
      const { text, closed } = await exchange(port, chunks, { pauseMs: 10 });
      expect(statuses(text)).toEqual([401]);
      expect(closed).toBe(true);
    });

    it("a request answered from its head whose body never comes gets that answer only, and is closed at the request timeout", async () => {
      clock.install();
      const { port } = await start({ ...refusedFromHead, ...timeouts });
      const socket = await connect(port);
      let text = "";
      let closed = false;
      socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
      socket.on("close", () => (closed = true));
      socket.write("POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
      expect(await unitsUntil(clock, () => closed, 4 + clock.slackUnits)).toBeGreaterThanOrEqual(4);
      expect(closed).toBe(true);
      expect(statuses(text)).toEqual([401]);
    });
  });

  it("408 for a head not complete within headersTimeoutMs, for a body not complete within requestTimeoutMs; not before", async () => {
    clock.install();
    const { port } = await start(timeouts);
    const [slowHead, slowBody] = [await connect(port), await connect(port)];
    const texts = ["", ""];
    slowHead.on("data", (d: Buffer) => (texts[0] += d.toString("latin1")));
    slowBody.on("data", (d: Buffer) => (texts[1] += d.toString("latin1")));
    const closed = [false, false];
    slowHead.on("close", () => (closed[0] = true));
    slowBody.on("close", () => (closed[1] = true));
    slowHead.write("GET / HTTP/1.1\r\nHost: t\r\n");
    slowBody.write("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    const headUnits = await unitsUntil(clock, () => closed[0]!, 2 + clock.slackUnits);
    expect(statuses(texts[0]!)).toEqual([408]);
    expect(headUnits).toBeGreaterThanOrEqual(2);
    expect(closed[1]).toBe(false);
    const bodyUnits = headUnits + (await unitsUntil(clock, () => closed[1]!, 4 + clock.slackUnits - headUnits));
    expect(statuses(texts[1]!)).toEqual([408]);
    expect(bodyUnits).toBeGreaterThanOrEqual(4);
  });

  it("closes a connection idle for keepAliveTimeoutMs, not before", async () => {
    clock.install();
    const { port } = await start(timeouts);
    const { closed } = await idleConnection(port);
    const units = await unitsUntil(clock, closed, 2 + clock.keepAliveSlackUnits);
    expect(closed()).toBe(true);
    expect(units).toBeGreaterThanOrEqual(2);
  });

  it.skipIf(kind === "node")("does not count empty lines as activity: an idle connection sent CRLF now and then still closes (node:http's own timer restarts on any byte)", async () => {
    clock.install();
    const { port } = await start(timeouts);
    const { socket, closed } = await idleConnection(port);
    for (let units = 0; units < 2 + clock.keepAliveSlackUnits && !closed(); units++) {
      socket.write("\r\n");
      await sleep(10);
      await clock.tick();
    }
    expect(closed()).toBe(true);
  });

  it("a client that pipelines and stops reading gets every answer once it reads again; meanwhile the server stops reading it and holds a bounded backlog", async () => {
    clock.install();
    const serverSockets: net.Socket[] = [];
    let handled = 0;
    const answer = "x".repeat(8 * 1024);
    const { port, http } = await start(timeouts, (ex) => {
      handled++;
      ex.send(200, [], answer);
    });
    http.server.on("connection", (s: net.Socket) => serverSockets.push(s));
    const n = 3_000;
    const socket = await connect(port);
    socket.pause();
    socket.write("GET / HTTP/1.1\r\nHost: t\r\n\r\n".repeat(n));
    await sleep(300);
    // Far past every timeout: the wait is the server's (it does not read a client that does not read).
    for (let i = 0; i < 10; i++) await clock.tick();
    const handledWhileUnread = handled;
    await sleep(100);
    expect(handled).toBe(handledWhileUnread);
    expect(handled).toBeLessThan(n);
    expect(serverSockets[0]!.writableLength).toBeLessThan(1024 * 1024);
    let text = "";
    socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
    socket.resume();
    const deadline = Date.now() + 20_000;
    while (text.split("HTTP/1.1 ").length - 1 < n && Date.now() < deadline) await sleep(50);
    socket.destroy();
    const replies = parseReplies(text);
    expect(replies.length).toBe(n);
    expect(replies.every((r) => r.status === 200 && r.body.length === answer.length)).toBe(true);
  }, 30_000);

  it("drain: stops accepting, answers what is in flight with Connection: close, closes idle connections", async () => {
    let release: (() => void) | undefined;
    const { port, http } = await start({}, (ex) => {
      release = () => ex.send(200, [], "late");
    });
    const idleSocket = await connect(port);
    const idleClosed = new Promise<void>((r) => idleSocket.on("close", () => r()));
    const inFlight = exchange(port, [post("x")], { settleMs: 2_000 });
    while (release === undefined) await sleep(5);
    const drained = http.drain(5_000);
    await idleClosed;
    const refused = await connect(port).then(
      (s) => (s.destroy(), false),
      () => true,
    );
    expect(refused).toBe(true);
    release();
    await drained;
    const { text, closed } = await inFlight;
    expect(parseReplies(text).map((r) => [r.body, r.headers.connection])).toEqual([["late", "close"]]);
    expect(closed).toBe(true);
    expect(http.inFlight()).toBe(0);
  });
});
