/**
 * The unary gRPC server against clients that do not play by the rules (#30): what is refused from
 * the headers alone, the limits per connection (streams, bytes, time per call, idle time), and
 * calls the client resets before they are handled. In process, with small limits so nothing
 * sleeps longer than a limit; the same classes against a real decision server, with memory and
 * CPU measured, are in grpc-abuse.int.test.ts.
 */
import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../lib/log";
import { grpcPrefix, RawH2 } from "../../test/h2-raw";
import { createUnaryGrpcServer, GrpcError, GrpcStatus, type GrpcLimits, type UnaryGrpcServer } from "./grpc-server";

const LIMITS: GrpcLimits = { maxStreams: 8, maxSessionBytes: 100_000, callTimeoutMs: 300, idleTimeoutMs: 1_000 };
const framed = (message: Buffer) => Buffer.concat([grpcPrefix(message.length), message]);

let s: UnaryGrpcServer;
let address: string;
/** Calls that reached the handler. */
let handled = 0;

beforeAll(async () => {
  s = createUnaryGrpcServer({
    methods: new Map([
      [
        "/t.T/Echo",
        (call) => {
          handled++;
          return { framed: framed(call.message) };
        },
      ],
    ]),
    maxMessageBytes: 64 * 1024,
    admit: (_path, headers) => (headers.authorization === "Bearer ok" ? undefined : new GrpcError(GrpcStatus.UNAUTHENTICATED, "no token")),
    limits: LIMITS,
    drainMs: 1_000,
    logger: createLogger("grpc-hostile-test", { level: "silent" }),
  });
  address = `127.0.0.1:${await s.listen(0, "127.0.0.1")}`;
});
afterAll(async () => {
  await s.drain();
});

interface Answer {
  status?: number;
  grpcStatus?: string;
  grpcMessage?: string;
  data: Buffer;
  /** When the answer ended (performance.now()). */
  atMs: number;
}

/** One call on `session`; `body` undefined sends the headers only and holds the stream open. */
function call(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: Buffer): Promise<Answer> {
  return new Promise((resolve) => {
    const stream = session.request({ ":method": "POST", ":path": "/t.T/Echo", "content-type": "application/grpc", te: "trailers", authorization: "Bearer ok", ...headers });
    let head: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    const data: Buffer[] = [];
    stream.on("response", (h) => (head = h));
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", (d: Buffer) => data.push(d));
    stream.on("error", () => undefined);
    stream.on("close", () => {
      const status = Number(head[":status"]);
      const grpcStatus = head["grpc-status"] ?? trailers["grpc-status"];
      const grpcMessage = head["grpc-message"] ?? trailers["grpc-message"];
      resolve({ status, grpcStatus: grpcStatus === undefined ? undefined : String(grpcStatus), grpcMessage: grpcMessage === undefined ? undefined : String(grpcMessage), data: Buffer.concat(data), atMs: performance.now() });
    });
    if (body === undefined) return;
    stream.end(body);
  });
}

function connect(): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://${address}`);
    session.once("remoteSettings", () => resolve(session));
    session.once("error", reject);
  });
}

describe("the gRPC server refuses from the headers alone", () => {
  it("takes application/grpc and application/grpc+proto only: application/grpcfoo and +json are 415", async () => {
    const session = await connect();
    try {
      const message = framed(Buffer.from("hi"));
      expect((await call(session, {}, message)).grpcStatus).toBe("0");
      expect((await call(session, { "content-type": "application/grpc+proto" }, message)).grpcStatus).toBe("0");
      expect((await call(session, { "content-type": "application/grpc; charset=utf-8" }, message)).grpcStatus).toBe("0");
      for (const contentType of ["application/grpcfoo", "application/grpc+json", "application/grpc-web", "text/plain"]) {
        expect((await call(session, { "content-type": contentType }, message)).status, contentType).toBe(415);
      }
    } finally {
      session.close();
    }
  });

  it('requires "te: trailers" (INTERNAL without it)', async () => {
    const session = await connect();
    try {
      const answer = await call(session, { te: undefined }, framed(Buffer.from("hi")));
      expect(answer.grpcStatus).toBe(String(GrpcStatus.INTERNAL));
      expect(answer.grpcMessage).toBe('A gRPC request must carry "te: trailers"');
    } finally {
      session.close();
    }
  });

  it("answers an unauthenticated call UNAUTHENTICATED before its message is sent, and never hands it to the handler", async () => {
    const session = await connect();
    const before = handled;
    try {
      // Headers only: the stream stays open on the client's side, yet the answer comes.
      const answer = await call(session, { authorization: "Bearer wrong" });
      expect(answer.grpcStatus).toBe(String(GrpcStatus.UNAUTHENTICATED));
      expect(handled).toBe(before);
    } finally {
      session.close();
    }
  });
});

describe("the gRPC server's limits per connection", () => {
  it("advertises SETTINGS_MAX_CONCURRENT_STREAMS, and HTTP/2 refuses a stream past it", async () => {
    const session = await connect();
    expect(session.remoteSettings.maxConcurrentStreams).toBe(LIMITS.maxStreams);
    session.close();
    // A raw client that opens 40 streams at once on one connection: the server holds at most 8.
    const raw = await RawH2.connect(address);
    try {
      const streams = Array.from({ length: 40 }, () => raw.open({ ":method": "POST", ":scheme": "http", ":path": "/t.T/Echo", ":authority": address, "content-type": "application/grpc", te: "trailers", authorization: "Bearer ok" }));
      const ends = await Promise.all(streams.map((st) => st.closed));
      const refused = ends.filter((e) => (e.kind === "reset" && e.code === http2.constants.NGHTTP2_REFUSED_STREAM) || e.kind === "goaway" || e.kind === "socket-closed");
      expect(refused.length).toBeGreaterThanOrEqual(40 - LIMITS.maxStreams);
    } finally {
      raw.close();
    }
  });

  it("closes a call whose message does not end within the call timeout with DEADLINE_EXCEEDED", async () => {
    const session = await connect();
    try {
      const started = performance.now();
      const stream = session.request({ ":method": "POST", ":path": "/t.T/Echo", "content-type": "application/grpc", te: "trailers", authorization: "Bearer ok" });
      const answer = new Promise<{ grpcStatus?: string; atMs: number }>((resolve) => {
        let grpcStatus: string | undefined;
        stream.on("response", (h) => (grpcStatus = String(h["grpc-status"])));
        stream.on("error", () => undefined);
        stream.on("close", () => resolve({ grpcStatus, atMs: performance.now() }));
      });
      // Half a message, then nothing.
      stream.write(Buffer.concat([grpcPrefix(100), Buffer.alloc(50)]));
      const { grpcStatus, atMs } = await answer;
      expect(grpcStatus).toBe(String(GrpcStatus.DEADLINE_EXCEEDED));
      expect(atMs - started).toBeGreaterThanOrEqual(LIMITS.callTimeoutMs - 5);
      expect(atMs - started).toBeLessThan(LIMITS.callTimeoutMs + 2_000);
    } finally {
      session.close();
    }
  });

  it("refuses a call whose announced message would take the connection past its byte budget, and frees the budget when calls end", async () => {
    const session = await connect();
    try {
      const held = (length: number) => {
        const stream = session.request({ ":method": "POST", ":path": "/t.T/Echo", "content-type": "application/grpc", te: "trailers", authorization: "Bearer ok" });
        const status = new Promise<string | undefined>((resolve) => {
          let grpcStatus: string | undefined;
          stream.on("response", (h) => (grpcStatus = h["grpc-status"] === undefined ? undefined : String(h["grpc-status"])));
          stream.on("trailers", (t) => (grpcStatus ??= String(t["grpc-status"])));
          stream.on("data", () => undefined);
          stream.on("error", () => undefined);
          stream.on("close", () => resolve(grpcStatus));
        });
        stream.write(grpcPrefix(length));
        return { stream, status };
      };
      // 60 KB announced and held; 60 KB more does not fit in 100 KB: refused at once.
      const first = held(60_000);
      const second = held(60_000);
      expect(await second.status).toBe(String(GrpcStatus.RESOURCE_EXHAUSTED));
      // The first call still completes, and then its bytes are free again.
      first.stream.end(Buffer.alloc(60_000));
      expect(await first.status).toBe("0");
      const third = held(60_000);
      third.stream.end(Buffer.alloc(60_000));
      expect(await third.status).toBe("0");
    } finally {
      session.close();
    }
  });

  it("closes a connection with no call open for the idle timeout (GOAWAY)", async () => {
    const session = await connect();
    const started = performance.now();
    await call(session, {}, framed(Buffer.from("x")));
    const closedAtMs = await new Promise<number>((resolve) => {
      session.on("error", () => undefined);
      session.once("close", () => resolve(performance.now()));
    });
    expect(closedAtMs - started).toBeGreaterThanOrEqual(LIMITS.idleTimeoutMs - 5);
    expect(closedAtMs - started).toBeLessThan(LIMITS.idleTimeoutMs + 2_000);
  });
  it("closes a connection that never sends a byte, or stops after the preface, at the idle timeout", async () => {
    const [host, port] = address.split(":");
    for (const send of ["", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"]) {
      const started = performance.now();
      const socket = net.connect(Number(port), host!, () => void (send && socket.write(send)));
      socket.on("data", () => undefined);
      socket.on("error", () => undefined);
      await new Promise((resolve) => socket.once("close", resolve));
      expect(performance.now() - started).toBeGreaterThanOrEqual(LIMITS.idleTimeoutMs - 5);
      expect(performance.now() - started).toBeLessThan(LIMITS.idleTimeoutMs + 2_000);
    }
  });
});

describe("calls the client resets", () => {
  it("are not handed to the handler when the reset is read with the message", async () => {
    const raw = await RawH2.connect(address);
    const before = handled;
    const calls = 500;
    try {
      for (let i = 0; i < calls; i++) {
        // The message and the reset in one write: the server reads the reset before it would decide.
        raw.batch(() => {
          const { id } = raw.open({ ":method": "POST", ":scheme": "http", ":path": "/t.T/Echo", ":authority": address, "content-type": "application/grpc", te: "trailers", authorization: "Bearer ok" });
          raw.data(id, framed(Buffer.from("x")), 1 << 14, true);
          raw.reset(id);
        });
        // Stay under the stream limit: each batch is reset before the next opens.
        if (i % LIMITS.maxStreams === LIMITS.maxStreams - 1) await raw.flushed();
      }
      await raw.flushed();
      // Let the server read everything; then a call that is not reset is handled, as before.
      const session = await connect();
      expect((await call(session, {}, framed(Buffer.from("after")))).grpcStatus).toBe("0");
      session.close();
      expect(handled - before - 1).toBeLessThanOrEqual(calls / 20);
    } finally {
      raw.close();
    }
  });
});
