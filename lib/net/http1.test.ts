/**
 * lib/net/http1.ts over real loopback sockets: framing, keep-alive and pipelining, chunked bodies,
 * 100-continue, the limits, refusal of anything not RFC 9112, timeouts and drain.
 */
import net from "node:net";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { createHttp1Server, headerValue, parseHead, type Http1Exchange, type Http1Handler, type Http1Options, type Http1Server } from "./http1";

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Parses the answers in a byte stream (Content-Length framed; 1xx have none). */
function parseReplies(text: string, headOnly = false): Reply[] {
  const out: Reply[] = [];
  let at = 0;
  while (at < text.length) {
    const end = text.indexOf("\r\n\r\n", at);
    if (end === -1) break;
    const lines = text.slice(at, end).split("\r\n");
    const status = Number(lines[0]!.split(" ")[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(":");
      headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
    }
    const length = status < 200 || headOnly ? 0 : Number(headers["content-length"] ?? 0);
    out.push({ status, headers, body: text.slice(end + 4, end + 4 + length) });
    at = end + 4 + length;
  }
  return out;
}

const servers: Http1Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.drain(100);
});

/** An echo server: answers `<method> <url> <body>` with the request's headers as JSON headers. */
async function start(overrides: Partial<Http1Options> = {}, handler?: Http1Handler): Promise<{ port: number; http: Http1Server; errors: unknown[] }> {
  const errors: unknown[] = [];
  const echo: Http1Handler =
    handler ??
    ((ex: Http1Exchange) => {
      ex.send(200, ["Content-Type", "text/plain", "X-Host", ex.header("host") ?? "-"], `${ex.method} ${ex.url} ${ex.body.toString("utf8")}`);
    });
  const http = createHttp1Server({
    route: () => echo,
    clientError: (kind) => ({ headers: ["Content-Type", "application/json"], body: JSON.stringify({ error: kind }) }),
    handlerError: (ex, error) => {
      errors.push(error);
      ex.send(500, [], "internal");
    },
    ...overrides,
  });
  servers.push(http);
  await new Promise<void>((resolve) => http.server.listen(0, "127.0.0.1", resolve));
  return { port: (http.server.address() as net.AddressInfo).port, http, errors };
}

/** Writes the chunks one after the other (each in its own write, a pause between them) and collects everything until the server closes or `settleMs` of quiet. */
function exchange(port: number, chunks: (string | Buffer)[], { settleMs = 150, pauseMs = 2 } = {}): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let text = "";
    let quiet: NodeJS.Timeout | undefined;
    const finish = (closed: boolean) => {
      clearTimeout(quiet);
      socket.destroy();
      resolve({ text, closed });
    };
    const arm = () => {
      clearTimeout(quiet);
      quiet = setTimeout(() => finish(false), settleMs);
    };
    socket.on("data", (d: Buffer) => {
      text += d.toString("latin1");
      arm();
    });
    socket.on("end", () => finish(true));
    socket.on("error", reject);
    socket.on("connect", async () => {
      for (const c of chunks) {
        socket.write(c);
        if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
      }
      arm();
    });
  });
}

const post = (body: string, extra = "") => `POST /echo?q=1 HTTP/1.1\r\nHost: t\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

describe("parseHead", () => {
  it("reads the request line and headers, names lower-cased, values trimmed", () => {
    expect(parseHead("POST /v1/check HTTP/1.1\r\nHost: a\r\nX-Thing:  b c \t\r\nEmpty:")).toEqual({
      method: "POST",
      url: "/v1/check",
      minor: 1,
      headers: ["host", "a", "x-thing", "b c", "empty", ""],
    });
  });
  it.each([
    ["a space before the colon", "GET / HTTP/1.1\r\nHost : a"],
    ["obs-fold", "GET / HTTP/1.1\r\nHost: a\r\n b"],
    ["a bare LF", "GET / HTTP/1.1\r\nHost: a\nX: b"],
    ["a bare CR", "GET / HTTP/1.1\r\nHost: a\rX: b"],
    ["a control character", "GET / HTTP/1.1\r\nHost: a\u0000"],
    ["HTTP/2.0", "GET / HTTP/2.0"],
    ["two spaces", "GET  / HTTP/1.1"],
    ["a lower-case version", "GET / http/1.1"],
    ["no name", "GET / HTTP/1.1\r\n: a"],
  ])("refuses %s", (_what, text) => {
    expect(parseHead(text)).toBeNull();
  });
  it("agrees with the RFC 9112 grammar written as regular expressions, on random heads (property)", () => {
    // The reference: the grammar as regular expressions, one field line at a time.
    const FIELD = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[\t ]*((?:[\x21-\x7e\x80-\xff](?:[\t \x21-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?)?)[\t ]*$/;
    const reference = (text: string) => {
      const lines = text.split("\r\n");
      const line = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) ([\x21-\x7e\x80-\xff]+) HTTP\/1\.([01])$/.exec(lines[0]!);
      if (!line) return null;
      const headers: string[] = [];
      for (const l of lines.slice(1)) {
        const m = FIELD.exec(l);
        if (!m) return null;
        headers.push(m[1]!.toLowerCase(), m[2]!);
      }
      return { method: line[1], url: line[2], minor: line[3] === "1" ? 1 : 0, headers };
    };
    const char = fc.constantFrom("a", "Z", "-", ":", " ", "\t", "\r", "\n", "\u0000", "\u007f", "é", "\u00a0", "/", "\"", "1");
    const fieldLine = fc.oneof(
      fc.tuple(fc.constantFrom("Host", "content-length", "X-A", "Bad Name", ""), fc.constantFrom(":", " :", ""), fc.string({ unit: char, maxLength: 12 })).map(([n, c, v]) => `${n}${c}${v}`),
      fc.string({ unit: char, maxLength: 20 }),
    );
    fc.assert(
      fc.property(fc.array(fieldLine, { maxLength: 6 }), (lines) => {
        const text = ["POST /v1/check HTTP/1.1", ...lines].join("\r\n");
        expect(parseHead(text)).toEqual(reference(text));
      }),
      { numRuns: 3_000 },
    );
  });

  it("keeps at most maxHeaders headers", () => {
    const head = parseHead(`GET / HTTP/1.1${"\r\nX: y".repeat(5)}`, 3);
    expect(head?.headers.length).toBe(6);
  });
  it("joins repeats as node:http does, and keeps the first of single-valued names", () => {
    const h = ["x-forwarded-for", "1.1.1.1", "authorization", "Bearer a", "x-forwarded-for", "2.2.2.2", "authorization", "Bearer b"];
    expect(headerValue(h, "x-forwarded-for")).toBe("1.1.1.1, 2.2.2.2");
    expect(headerValue(h, "authorization")).toBe("Bearer a");
    expect(headerValue(h, "nope")).toBeUndefined();
  });
});

describe("createHttp1Server", () => {
  it("answers with Content-Length, Date and keep-alive, and serves several requests on one connection", async () => {
    const { port } = await start();
    const { text, closed } = await exchange(port, [post("héllo"), post("again")], { pauseMs: 20 });
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
    const { text } = await exchange(port, [[1, 2, 3, 4, 5].map((n) => post(String(n))).join("")]);
    expect(parseReplies(text).map((r) => r.body)).toEqual(["#1", "#2", "#3", "#4", "#5"]);
  });

  it("reads chunked bodies (extensions and trailers ignored)", async () => {
    const { port } = await start();
    const req = "POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n";
    const { text } = await exchange(port, [req, post("next")]);
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
        const { text } = await exchange(port, chunks, { pauseMs: 1, settleMs: 60 });
        expect(parseReplies(text).map((r) => r.body)).toEqual(expected);
      }),
      { numRuns: 40 },
    );
  });

  it("answers Expect: 100-continue with 100 Continue, then the answer; another expectation is 417", async () => {
    const { port } = await start();
    const continued = await exchange(port, ["POST /e HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n", "abc"], { pauseMs: 30 });
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
    expect(parseReplies(chunked.text)[0]!.status).toBe(413);
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
    const small = await exchange(port, [post("skipped").replace("/echo?q=1", "/no") + post("kept")]);
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
    expect(parseReplies(text)[0]!.status).toBe(431);
    expect(closed).toBe(true);
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
    const replies = parseReplies(text);
    expect(replies.map((r) => [r.status, r.body])).toEqual([[400, '{"error":"malformed"}']]);
    expect(closed).toBe(true);
    expect(ran).toBe(0);
  });

  it("refuses a broken request line before the head ends", async () => {
    const { port } = await start();
    const { text, closed } = await exchange(port, ["NOT HTTP AT ALL\r\nX: partial"]);
    expect(parseReplies(text)[0]!.status).toBe(400);
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
    const { text } = await exchange(port, [post("a"), post("b"), post("c")], { pauseMs: 20 });
    expect(parseReplies(text).map((r) => r.status)).toEqual([500, 500, 200]);
    expect(errors.map((e) => (e as Error).message)).toEqual(["sync", "async"]);
  });

  it("never writes a header value with a line break (response splitting)", async () => {
    const { port, errors } = await start({}, (ex) => ex.send(200, ["X-Evil", "a\r\nSet-Cookie: x=1"], "no"));
    const { text } = await exchange(port, [post("a")]);
    expect(parseReplies(text).map((r) => r.status)).toEqual([500]);
    expect(text).not.toContain("Set-Cookie");
    expect(errors.length).toBe(1);
  });

  it("408 for a head that does not complete within headersTimeoutMs; an idle connection is closed after keepAliveTimeoutMs", async () => {
    const { port } = await start({ headersTimeoutMs: 1_000, keepAliveTimeoutMs: 1_000 });
    const slow = await exchange(port, ["GET / HTTP/1.1\r\nHost: t\r\n"], { settleMs: 3_500 });
    expect(parseReplies(slow.text).map((r) => r.status)).toEqual([408]);
    expect(slow.closed).toBe(true);
    const idle = await exchange(port, [post("x")], { settleMs: 3_500 });
    expect(parseReplies(idle.text).map((r) => r.status)).toEqual([200]);
    expect(idle.closed).toBe(true);
  });

  it("drain: stops accepting, answers what is in flight with Connection: close, closes idle connections", async () => {
    let release: (() => void) | undefined;
    const { port, http } = await start({}, (ex) => {
      release = () => ex.send(200, [], "late");
    });
    const idleSocket = net.connect(port, "127.0.0.1");
    const idleClosed = new Promise<void>((r) => idleSocket.on("close", () => r()));
    const inFlight = exchange(port, [post("x")], { settleMs: 2_000 });
    while (release === undefined) await new Promise((r) => setTimeout(r, 5));
    const drained = http.drain(5_000);
    await idleClosed;
    const refused = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1");
      s.on("error", () => resolve(true));
      s.on("connect", () => {
        s.destroy();
        resolve(false);
      });
    });
    expect(refused).toBe(true);
    release();
    await drained;
    const { text, closed } = await inFlight;
    expect(parseReplies(text).map((r) => [r.body, r.headers.connection])).toEqual([["late", "close"]]);
    expect(closed).toBe(true);
    expect(http.inFlight()).toBe(0);
  });
});
