/**
 * The unary gRPC server on node:http2 against a real @grpc/grpc-js client (and raw HTTP/2 where
 * grpc-js would not send what is tested): messages and trailers, statuses and their messages,
 * size, deadlines, what it refuses, draining.
 */
import http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../lib/log";
import { createUnaryGrpcServer, encodeGrpcMessage, GrpcError, GrpcStatus, type UnaryGrpcServer, type UnaryHandler } from "./grpc-server";

function framed(message: Buffer): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let s: UnaryGrpcServer;
let address: string;
let client: grpc.Client;

beforeAll(async () => {
  s = createUnaryGrpcServer({
    methods: new Map<string, UnaryHandler>([
      ["/t.T/Echo", (call) => ({ framed: framed(Buffer.concat([Buffer.from("echo:"), call.message])), trailers: { "x-seen": String(call.headers["x-token"] ?? "") } })],
      ["/t.T/Slow", async (call) => (await sleep(Number(call.message.toString())), { framed: framed(Buffer.from("late")) })],
      [
        "/t.T/Fail",
        (call) => {
          if (call.message.toString() === "bug") throw new Error("secret internals");
          throw new GrpcError(GrpcStatus.NOT_FOUND, "no such thing: ü, 100% sure\n");
        },
      ],
      // The same refusals, rejected from a promise instead of thrown.
      ["/t.T/AsyncFail", (call) => Promise.resolve().then(() => (call.message.toString() === "bug" ? Promise.reject(new Error("secret internals")) : Promise.reject(new GrpcError(GrpcStatus.PERMISSION_DENIED, "not yours"))))],
    ]),
    maxMessageBytes: 1024,
    drainMs: 5_000,
    logger: createLogger("grpc-server-test", { level: "silent" }),
  });
  address = `127.0.0.1:${await s.listen(0, "127.0.0.1")}`;
  client = new grpc.Client(address, grpc.credentials.createInsecure());
});
afterAll(async () => {
  client.close();
  await s.drain();
});

interface Result {
  error: grpc.ServiceError | null;
  value?: Buffer;
  trailers?: grpc.Metadata;
}
function unary(path: string, message: Buffer, options: { metadata?: grpc.Metadata; deadlineMs?: number } = {}): Promise<Result> {
  return new Promise((resolve) => {
    let result: Omit<Result, "trailers"> | null = null;
    let trailers: grpc.Metadata | undefined;
    const done = () => result && trailers && resolve({ ...result, trailers });
    const call = client.makeUnaryRequest(
      path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      message,
      options.metadata ?? new grpc.Metadata(),
      { deadline: Date.now() + (options.deadlineMs ?? 5_000) },
      (error, value) => {
        result = { error, value };
        done();
      },
    );
    call.on("status", (status: grpc.StatusObject) => {
      trailers = status.metadata;
      done();
    });
  });
}

/** A raw HTTP/2 call: what came back in headers, trailers and data. */
function raw(headers: http2.OutgoingHttpHeaders, body: Buffer): Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders; data: Buffer }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://${address}`);
    session.on("error", reject);
    const stream = session.request({ ":method": "POST", ":path": "/t.T/Echo", "content-type": "application/grpc", te: "trailers", ...headers });
    const chunks: Buffer[] = [];
    let response: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    stream.on("response", (h) => (response = h));
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", (d: Buffer) => chunks.push(d));
    stream.on("error", () => undefined);
    stream.on("close", () => {
      session.close();
      resolve({ headers: response, trailers, data: Buffer.concat(chunks) });
    });
    stream.end(body);
  });
}

describe("the unary gRPC server (node:http2)", () => {
  it("answers a message with grpc-status OK and the handler's trailers; metadata reaches the handler", async () => {
    const metadata = new grpc.Metadata();
    metadata.set("x-token", "t0k");
    const r = await unary("/t.T/Echo", Buffer.from("hi"), { metadata });
    expect(r.error).toBeNull();
    expect(r.value?.toString()).toBe("echo:hi");
    expect(r.trailers?.get("x-seen")).toEqual(["t0k"]);
    // An empty message is a message (proto3's all-defaults).
    expect((await unary("/t.T/Echo", Buffer.alloc(0))).value?.toString()).toBe("echo:");
  });

  it("sends a handler's status with its message intact (percent-encoded on the wire); a bug is INTERNAL without its details", async () => {
    const r = await unary("/t.T/Fail", Buffer.from("x"));
    expect(r.error?.code).toBe(grpc.status.NOT_FOUND);
    expect(r.error?.details).toBe("no such thing: ü, 100% sure\n");
    expect(encodeGrpcMessage("a ü %")).toBe("a %C3%BC %25");
    const bug = await unary("/t.T/Fail", Buffer.from("bug"));
    expect(bug.error?.code).toBe(grpc.status.INTERNAL);
    expect(bug.error?.details).toBe("internal error");
  });

  it("answers a handler's rejected promise as it answers a throw: its GrpcError's status, or INTERNAL for a bug", async () => {
    const r = await unary("/t.T/AsyncFail", Buffer.from("x"));
    expect(r.error?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(r.error?.details).toBe("not yours");
    const bug = await unary("/t.T/AsyncFail", Buffer.from("bug"));
    expect(bug.error?.code).toBe(grpc.status.INTERNAL);
    expect(bug.error?.details).toBe("internal error");
    // And the next call on the same connection is answered as usual.
    expect((await unary("/t.T/Echo", Buffer.from("after"))).value?.toString()).toBe("echo:after");
  });

  it("answers UNIMPLEMENTED for an unknown method, RESOURCE_EXHAUSTED for a message over the bound, and keeps serving", async () => {
    expect((await unary("/t.T/Nope", Buffer.from("x"))).error?.code).toBe(grpc.status.UNIMPLEMENTED);
    const big = await unary("/t.T/Echo", Buffer.alloc(1025, 1));
    expect(big.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(big.error?.details).toBe("Received message larger than max (1025 vs. 1024)");
    // A large one sent in many DATA frames.
    expect((await unary("/t.T/Echo", Buffer.alloc(200_000, 1))).error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect((await unary("/t.T/Echo", Buffer.alloc(1024, 0x61))).value?.length).toBe(5 + 1024);
  });

  it("honours grpc-timeout: an answer ready after the deadline is DEADLINE_EXCEEDED; a malformed timeout is INTERNAL", async () => {
    const late = await raw({ ":path": "/t.T/Slow", "grpc-timeout": "30m" }, framed(Buffer.from("120")));
    expect(late.headers["grpc-status"] ?? late.trailers["grpc-status"]).toBe(String(grpc.status.DEADLINE_EXCEEDED));
    const inTime = await raw({ ":path": "/t.T/Slow", "grpc-timeout": "5S" }, framed(Buffer.from("1")));
    expect(inTime.trailers["grpc-status"]).toBe("0");
    expect(inTime.data.subarray(5).toString()).toBe("late");
    const bad = await raw({ "grpc-timeout": "soon" }, framed(Buffer.from("x")));
    expect(bad.headers["grpc-status"]).toBe(String(grpc.status.INTERNAL));
    // grpc-js's own deadline: the client gives up, the server's late answer goes nowhere.
    expect((await unary("/t.T/Slow", Buffer.from("300"), { deadlineMs: 50 })).error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
  });

  it("refuses what is not unary uncompressed gRPC: 415 without the content type, UNIMPLEMENTED for compression or two messages", async () => {
    expect((await raw({ "content-type": "application/json" }, Buffer.from("{}"))).headers[":status"]).toBe(415);
    const compressed = Buffer.from(framed(Buffer.from("x")));
    compressed[0] = 1;
    expect((await raw({ "grpc-encoding": "gzip" }, compressed)).headers["grpc-status"]).toBe(String(grpc.status.UNIMPLEMENTED));
    expect((await raw({}, compressed)).headers["grpc-status"]).toBe(String(grpc.status.UNIMPLEMENTED));
    const two = await raw({}, Buffer.concat([framed(Buffer.from("a")), framed(Buffer.from("b"))]));
    expect(two.headers["grpc-status"] ?? two.trailers["grpc-status"]).toBe(String(grpc.status.UNIMPLEMENTED));
    expect((await raw({}, Buffer.alloc(0))).headers["grpc-status"]).toBe(String(grpc.status.UNIMPLEMENTED));
    expect((await raw({}, Buffer.from([0, 0, 0, 0, 9, 1]))).headers["grpc-status"]).toBe(String(grpc.status.UNIMPLEMENTED));
  });

  it("drains: a call in flight is answered, then the server closes", async () => {
    const other = createUnaryGrpcServer({
      methods: new Map([["/t.T/Slow", async () => (await sleep(300), { framed: framed(Buffer.from("done")) })]]),
      maxMessageBytes: 1024,
      drainMs: 5_000,
      logger: createLogger("grpc-server-test", { level: "silent" }),
    });
    const port = await other.listen(0, "127.0.0.1");
    const c = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const inFlight = new Promise<Buffer | undefined>((resolve, reject) =>
      c.makeUnaryRequest("/t.T/Slow", (b: Buffer) => b, (b: Buffer) => b, Buffer.from(""), new grpc.Metadata(), {}, (e, v) => (e ? reject(e) : resolve(v))),
    );
    await sleep(100);
    const started = performance.now();
    await other.drain();
    expect((await inFlight)?.toString()).toBe("done");
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(other.server.listening).toBe(false);
    c.close();
  });

  it("calls afterStart once a turn's calls were all started, after their handlers ran (the store call goes out from there)", async () => {
    const log: string[] = [];
    const other = createUnaryGrpcServer({
      methods: new Map<string, UnaryHandler>([
        [
          "/t.T/Mark",
          (call) => {
            log.push(`call ${call.message.toString()}`);
            return Promise.resolve({ framed: framed(Buffer.from("ok")) });
          },
        ],
      ]),
      maxMessageBytes: 1024,
      drainMs: 5_000,
      logger: createLogger("grpc-server-test", { level: "silent" }),
      afterStart: () => log.push("after"),
    });
    const port = await other.listen(0, "127.0.0.1");
    const session = http2.connect(`http://127.0.0.1:${port}`);
    // Five calls written together: they end in one read, so one turn starts them all.
    const answers = ["1", "2", "3", "4", "5"].map(
      (n) =>
        new Promise<void>((resolve) => {
          const req = session.request({ ":method": "POST", ":path": "/t.T/Mark", "content-type": "application/grpc", te: "trailers" });
          req.on("data", () => undefined);
          req.on("end", () => resolve());
          req.end(framed(Buffer.from(n)));
        }),
    );
    await Promise.all(answers);
    session.close();
    await other.drain();
    const calls = log.filter((l) => l.startsWith("call"));
    expect(calls).toHaveLength(5);
    // Every turn's afterStart follows its calls: the log opens with a call and closes with "after",
    // and there is no "after" without a call before it.
    expect(log[0]).toMatch(/^call/);
    expect(log.at(-1)).toBe("after");
    expect(log.join(" ")).not.toMatch(/after after/);
  });
});
