/**
 * The hand-written server (lib/net/http1.ts) against Node's own parser (a plain node:http server):
 * the same byte streams — valid, malformed, and the request-smuggling classics — each written whole
 * and split in two at every byte, to both over real sockets. Each server answers every request it
 * frames with that request (method, target, body), so the answers show what each framed. The rule:
 * http1.ts frames the requests Node frames, in order, or refuses (a 4xx, then the connection
 * closes) where Node went on; it never frames a request Node did not see, nor one Node saw
 * differently. Node's parser is the reference because it is what the decision API would run on
 * without http1.ts, and what the probe of issue #30 compared it with.
 */
import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHttpServer } from "./create-http-server";
import type { HttpServer } from "./http-server";
import { parseReplies } from "./testing/raw-http";

interface Framed {
  method: string;
  url: string;
  body: string;
}

interface Outcome {
  /** The requests the server framed, in order. */
  framed: Framed[];
  /** It answered a status of its own (not an echo): it refused the rest. */
  refused: number | null;
  /** Its last answer said `Connection: close`: it read nothing further, and said so. */
  closed: boolean;
}

const frame = (method: string, url: string, body: Buffer): string => JSON.stringify({ method, url, body: body.toString("latin1") });

let hand: HttpServer;
let node: http.Server;
const ports = { hand: 0, node: 0 };

beforeAll(async () => {
  hand = createHttpServer("http1", {
    route: () => (ex) => ex.send(200, ["Content-Type", "application/json"], frame(ex.method, ex.url, ex.body)),
    clientError: (kind) => ({ headers: [], body: kind }),
    handlerError: (ex) => ex.send(500, [], "handler error"),
  });
  // Node's parser with Node's defaults, but for a 16 KiB head, as http1.ts.
  node = http.createServer({ maxHeaderSize: 16 * 1024 }, (req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (d: Buffer) => parts.push(d));
    req.on("end", () => {
      const body = frame(req.method ?? "", req.url ?? "", Buffer.concat(parts));
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body, "latin1") });
      res.end(body, "latin1");
    });
  });
  await new Promise<void>((r) => hand.server.listen(0, "127.0.0.1", r));
  await new Promise<void>((r) => node.listen(0, "127.0.0.1", r));
  ports.hand = (hand.server.address() as net.AddressInfo).port;
  ports.node = (node.address() as net.AddressInfo).port;
});

afterAll(async () => {
  await hand.drain(100);
  node.closeAllConnections();
  await new Promise((r) => node.close(r));
});

/** Writes the stream (in two writes when `cut` is given), half-closes, and reads until the server closes. */
function feed(port: number, stream: Buffer, cut?: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: "127.0.0.1", allowHalfOpen: true, noDelay: true });
    let text = "";
    const timer = setTimeout(() => socket.destroy(), 5_000);
    socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
    socket.on("error", () => socket.destroy());
    socket.on("close", () => {
      clearTimeout(timer);
      const framed: Framed[] = [];
      let refused: number | null = null;
      const replies = parseReplies(text);
      for (const reply of replies) {
        if (reply.status === 200 && reply.headers["content-type"] === "application/json") framed.push(JSON.parse(reply.body) as Framed);
        else if (reply.status >= 400) refused ??= reply.status;
      }
      resolve({ framed, refused, closed: replies.at(-1)?.headers.connection === "close" });
    });
    socket.on("connect", () => {
      if (cut === undefined) return void socket.end(stream);
      socket.write(stream.subarray(0, cut));
      setTimeout(() => socket.end(stream.subarray(cut)), 2);
    });
  });
}

/** http1.ts framed what Node framed, or a prefix of it and refused (or ended the connection, saying so) where they part. */
function expectNoMoreThanNode(hand: Outcome, node: Outcome, where: string): void {
  expect(hand.framed, where).toEqual(node.framed.slice(0, hand.framed.length));
  if (hand.framed.length < node.framed.length) expect(hand.refused !== null || hand.closed, `${where}: http1 framed less than Node, so it must have refused`).toBe(true);
}

const H = "Host: t\r\n";
const smuggled = "GET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n";
const STREAMS: [string, string][] = [
  ["a GET", `GET /a?x=1 HTTP/1.1\r\n${H}\r\n`],
  ["a POST with Content-Length", `POST /p HTTP/1.1\r\n${H}Content-Length: 5\r\n\r\nhello`],
  ["pipelined requests, empty lines between", `GET /1 HTTP/1.1\r\n${H}\r\n\r\nPOST /2 HTTP/1.1\r\n${H}Content-Length: 2\r\n\r\nab\r\nGET /3 HTTP/1.1\r\n${H}\r\n`],
  ["a chunked body with extensions and trailers", `POST /c HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n1\r\n!\r\n0\r\nX-T: 1\r\n\r\n`],
  ["HTTP/1.0 with keep-alive, twice", `GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n`],
  ["Expect: 100-continue", `POST /e HTTP/1.1\r\n${H}Expect: 100-continue\r\nContent-Length: 3\r\n\r\nabc`],
  ["a leading-zero Content-Length", `POST /z HTTP/1.1\r\n${H}Content-Length: 003\r\n\r\nabc`],
  ["obs-text in a header value", `GET /o HTTP/1.1\r\n${H}X-O: caf\xe9\r\n\r\n`],
  // Smuggling: two ways to frame one body.
  ["CL then TE (CL.TE)", `POST /a HTTP/1.1\r\n${H}Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nX${smuggled}`],
  ["TE then CL (TE.CL)", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5c\r\n${smuggled}\r\n0\r\n\r\n`],
  ["two equal Content-Lengths", `POST /a HTTP/1.1\r\n${H}Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc`],
  ["two different Content-Lengths", `POST /a HTTP/1.1\r\n${H}Content-Length: 3\r\nContent-Length: ${3 + smuggled.length}\r\n\r\nabc${smuggled}`],
  ["a Content-Length list", `POST /a HTTP/1.1\r\n${H}Content-Length: 3, 3\r\n\r\nabc`],
  ["a signed Content-Length", `POST /a HTTP/1.1\r\n${H}Content-Length: +3\r\n\r\nabc`],
  ["a hex Content-Length", `POST /a HTTP/1.1\r\n${H}Content-Length: 0x3\r\n\r\nabc`],
  ["a space before the colon", `POST /a HTTP/1.1\r\n${H}Content-Length : 3\r\n\r\nabc`],
  ["obs-fold of Transfer-Encoding", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n`],
  ["obs-fold of another header", `GET /a HTTP/1.1\r\n${H}X-A: 1\r\n 2\r\n\r\n`],
  ["TE: chunked twice", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`],
  ["TE: gzip, chunked", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`],
  ["TE: chunked, gzip", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked, gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n`],
  ["TE: identity", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: identity\r\nContent-Length: 3\r\n\r\nabc`],
  ["TE with a tab", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n`],
  ["TE in another case", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: CHUNKED\r\n\r\n3\r\nabc\r\n0\r\n\r\n`],
  ["bare LF line ends", `GET /a HTTP/1.1\n${H.replace("\r\n", "\n")}\n`],
  ["a bare LF in a header line", `POST /a HTTP/1.1\r\n${H}X-A: 1\nContent-Length: 3\r\n\r\nabc`],
  ["a bare CR in a header line", `POST /a HTTP/1.1\r\n${H}X-A: 1\rContent-Length: 3\r\n\r\nabc`],
  ["a NUL in a header value", `GET /a HTTP/1.1\r\n${H}X-A: a\x00b\r\n\r\n`],
  ["a DEL in a header value", `GET /a HTTP/1.1\r\n${H}X-A: a\x7fb\r\n\r\n`],
  ["a 101st header line framing a hidden request", `POST /a HTTP/1.1\r\n${H}${"X-F: 1\r\n".repeat(99)}Content-Length: ${smuggled.length}\r\n\r\n${smuggled}`],
  ["a chunk size that overflows", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF1\r\nabc\r\n0\r\n\r\n`],
  ["a chunk size with leading zeros", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n0000000003\r\nabc\r\n0\r\n\r\n`],
  ["a negative chunk size", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n-3\r\nabc\r\n0\r\n\r\n`],
  ["chunk data longer than its size", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n`],
  ["a chunk size with a space", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n0\r\n\r\n`],
  ["a bare LF after the chunk size", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n`],
  ["a request line with two spaces", `GET  /a HTTP/1.1\r\n${H}\r\n`],
  ["HTTP/1.2", `GET /a HTTP/1.2\r\n${H}\r\n`],
  ["a lower-case method", `get /a HTTP/1.1\r\n${H}\r\n`],
  ["a method Node does not know", `BREW /a HTTP/1.1\r\n${H}\r\n`],
  ["a method Node knows that is not GET or POST", `PURGE /a HTTP/1.1\r\n${H}\r\nM-SEARCH * HTTP/1.1\r\n${H}\r\n`],
  ["CONNECT", `CONNECT t:443 HTTP/1.1\r\n${H}\r\n${smuggled}`],
  ["an Upgrade to WebSocket", `GET /a HTTP/1.1\r\n${H}Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n${smuggled}`],
  ["a Content-Length of 20 digits", `POST /a HTTP/1.1\r\n${H}Content-Length: 99999999999999999999\r\n\r\nabc`],
  ["a header line without a colon", `GET /a HTTP/1.1\r\n${H}X-A\r\n\r\n`],
  ["an empty header name", `GET /a HTTP/1.1\r\n${H}: 1\r\n\r\n`],
  ["obs-fold in a trailer", `POST /a HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n 2\r\n\r\n`],
  ["a space in the target", `GET /a b HTTP/1.1\r\n${H}\r\n`],
  ["an absolute-form target", `GET http://t/a HTTP/1.1\r\n${H}\r\n`],
  ["HTTP/1.1 without Host", "GET /a HTTP/1.1\r\nX-A: 1\r\n\r\n"],
  ["two Hosts", `GET /a HTTP/1.1\r\n${H}${H}\r\n`],
  ["a header name with a slash", `GET /a HTTP/1.1\r\n${H}X/A: 1\r\n\r\n`],
  ["a body cut short by the end of input", `POST /a HTTP/1.1\r\n${H}Content-Length: 10\r\n\r\nabc`],
  ["a GET with a body, then another request", `GET /a HTTP/1.1\r\n${H}Content-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\n${H}\r\n`],
];

describe("http1.ts frames what Node's parser frames, or refuses", () => {
  it.each(STREAMS)("%s, whole and split at every byte", async (what, text) => {
    const stream = Buffer.from(text, "latin1");
    const whole = await feed(ports.hand, stream);
    expectNoMoreThanNode(whole, await feed(ports.node, stream), `${what}: whole`);
    for (let at = 1; at < stream.length; at += 16) {
      const cuts = Array.from({ length: Math.min(16, stream.length - at) }, (_, i) => at + i);
      const outcomes = await Promise.all(cuts.map(async (cut) => ({ cut, hand: await feed(ports.hand, stream, cut), node: await feed(ports.node, stream, cut) })));
      for (const o of outcomes) {
        // Node itself is not always split-blind (an Upgrade request alone in a read is followed by
        // more requests, in the same read it is not): each split is compared with Node's own.
        expectNoMoreThanNode(o.hand, o.node, `${what}: cut at ${o.cut}`);
        expect(o.hand, `${what}: http1 cut at ${o.cut} answers as whole`).toEqual(whole);
      }
    }
    // The longest stream (a 101-line head) is ~900 cuts on two servers: seconds on a busy machine.
  }, 60_000);

  it("the valid streams are framed the same by both, not refused", async () => {
    for (const [what, text] of STREAMS.slice(0, 8)) {
      const stream = Buffer.from(text, "latin1");
      const [hand, node] = [await feed(ports.hand, stream), await feed(ports.node, stream)];
      expect(hand, what).toEqual(node);
      expect(hand.framed.length, what).toBeGreaterThan(0);
    }
  });
});
