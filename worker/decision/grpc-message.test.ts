import { describe, expect, it } from "vitest";
import { MessageGather } from "./grpc-message";
import { GrpcError, GrpcStatus } from "./grpc-status";

function framed(message: Buffer): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
}

function gather(maxMessageBytes = 1024, reserve: (bytes: number) => boolean = () => true) {
  const reserved: number[] = [];
  const g = new MessageGather({ maxMessageBytes, path: "/t.T/M", reserve: (n) => (reserved.push(n), reserve(n)) });
  return { g, reserved };
}

function refusal(fn: () => void): GrpcError {
  try {
    fn();
  } catch (error) {
    if (error instanceof GrpcError) return error;
    throw error;
  }
  throw new Error("expected a GrpcError");
}

describe("gathering one gRPC message", () => {
  it("takes a message in one frame as a view of that frame, with no copy", () => {
    const { g, reserved } = gather();
    const frame = framed(Buffer.from("hello"));
    g.push(frame);
    const message = g.finish();
    expect(message.toString()).toBe("hello");
    expect(message.buffer).toBe(frame.buffer);
    expect(reserved).toEqual([5]);
  });

  it("reassembles a message sent one byte per frame, its header included, exactly", () => {
    const body = Buffer.from(Array.from({ length: 3000 }, (_, i) => i % 251));
    const { g, reserved } = gather(4096);
    for (const byte of framed(body)) g.push(Buffer.from([byte]));
    expect(g.finish().equals(body)).toBe(true);
    expect(reserved).toEqual([3000]);
    // Any split, the same bytes.
    const { g: g2 } = gather(4096);
    const all = framed(body);
    g2.push(all.subarray(0, 3));
    g2.push(all.subarray(3, 1000));
    g2.push(all.subarray(1000));
    expect(g2.finish().equals(body)).toBe(true);
  });

  it("copies each byte at most once: 1 MiB in 1-byte frames takes linear time", () => {
    const size = 1 << 20;
    const { g } = gather(size);
    const all = framed(Buffer.alloc(size, 7));
    const started = performance.now();
    for (let i = 0; i < all.length; i++) g.push(all.subarray(i, i + 1));
    const ms = performance.now() - started;
    expect(g.finish().length).toBe(size);
    // Gathering by concatenation copies ~n²/2 = 5.5e11 bytes here (minutes); one copy per byte is well under a second even on a loaded machine.
    expect(ms).toBeLessThan(3_000);
  });

  it("refuses a message over the bound from its length prefix, before any of it arrives and before reserving it", () => {
    const { g, reserved } = gather(1024);
    const error = refusal(() => g.push(Buffer.from([0, 0, 0, 4, 1])));
    expect(error.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect(error.details).toBe("Received message larger than max (1025 vs. 1024)");
    expect(reserved).toEqual([]);
  });

  it("refuses a message the connection's byte budget cannot reserve", () => {
    const { g, reserved } = gather(1024, () => false);
    expect(refusal(() => g.push(framed(Buffer.from("x")))).code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect(reserved).toEqual([1]);
    expect(g.reservedBytes).toBe(0);
  });

  it("refuses a compressed message, a second message, a truncated one and none", () => {
    const compressed = framed(Buffer.from("x"));
    compressed[0] = 1;
    expect(refusal(() => gather().g.push(compressed)).code).toBe(GrpcStatus.UNIMPLEMENTED);
    const two = gather().g;
    expect(refusal(() => two.push(Buffer.concat([framed(Buffer.from("a")), framed(Buffer.from("b"))]))).details).toBe("Received a second request message for unary method /t.T/M");
    const cut = gather().g;
    cut.push(Buffer.from([0, 0, 0, 0, 9, 1]));
    expect(refusal(() => cut.finish()).details).toBe("Received a truncated request message");
    const headerOnly = gather().g;
    headerOnly.push(Buffer.from([0, 0]));
    expect(refusal(() => headerOnly.finish()).details).toBe("Received a truncated request message");
    const trailing = gather().g;
    trailing.push(Buffer.concat([framed(Buffer.from("a")), Buffer.from([0, 0])]));
    expect(refusal(() => trailing.finish()).details).toBe("Received a truncated request message");
    expect(refusal(() => gather().g.finish()).details).toBe("Received no request message for unary method /t.T/M");
    // An empty message is a message (proto3's all-defaults).
    const empty = gather().g;
    empty.push(framed(Buffer.alloc(0)));
    expect(empty.finish().length).toBe(0);
  });
});
