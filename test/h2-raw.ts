/**
 * A raw HTTP/2 (h2c) client for the hostile-client tests: it writes frames itself, so it can do
 * what well-behaved clients (node:http2, grpc-js) never do — open more streams than the server
 * allows, send a message one byte per DATA frame, hold streams open, reset them at will. Headers
 * go out as HPACK literals (never indexed, no Huffman), which every decoder must accept; what the
 * server sends back is not HPACK-decoded, only tracked per stream: ended (END_STREAM), reset
 * (RST_STREAM and its code), or cut by GOAWAY. It answers SETTINGS and PING as the protocol asks.
 */
import net from "node:net";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
const DATA = 0x0;
const HEADERS = 0x1;
const RST_STREAM = 0x3;
const SETTINGS = 0x4;
const PING = 0x6;
const GOAWAY = 0x7;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const ACK = 0x1;

export type StreamEnd = { kind: "ended" } | { kind: "reset"; code: number } | { kind: "goaway"; code: number } | { kind: "socket-closed" };

export interface RawStream {
  id: number;
  /** Resolves when the server ended, reset or cut the stream; `atMs` is performance.now() then. */
  closed: Promise<StreamEnd & { atMs: number }>;
}

/** An HPACK integer with an N-bit prefix (RFC 7541 §5.1), `first` holding the pattern bits. */
function hpackInt(value: number, prefixBits: number, first: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [first | value];
  const out = [first | max];
  value -= max;
  while (value >= 128) {
    out.push((value % 128) | 0x80);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return out;
}

/** A header block of literal fields never indexed, with literal names (RFC 7541 §6.2.3). */
export function hpackLiterals(headers: Record<string, string>): Buffer {
  const bytes: number[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const n = Buffer.from(name, "latin1");
    const v = Buffer.from(value, "latin1");
    bytes.push(0x10, ...hpackInt(n.length, 7, 0), ...n, ...hpackInt(v.length, 7, 0), ...v);
  }
  return Buffer.from(bytes);
}

function frame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId, 5);
  return Buffer.concat([header, payload]);
}

export class RawH2 {
  private readonly socket: net.Socket;
  private nextId = 1;
  private pending: Buffer = Buffer.alloc(0);
  private readonly waiting = new Map<number, (end: StreamEnd) => void>();
  /** Streams the server reset, by error code (7 = REFUSED_STREAM, 0 = NO_ERROR). */
  readonly resets = new Map<number, number>();
  goaway: number | null = null;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on("data", (chunk: Buffer) => this.read(chunk));
    socket.on("error", () => undefined);
    socket.on("close", () => this.endAll({ kind: "socket-closed" }));
  }

  static connect(address: string): Promise<RawH2> {
    const [host, port] = address.split(":");
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), host!, () => {
        socket.setNoDelay(true);
        socket.write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0)]));
        resolve(new RawH2(socket));
      });
      socket.once("error", reject);
    });
  }

  /** Opens a stream with `headers` (pseudo-headers first); `end` sends END_STREAM with them. */
  open(headers: Record<string, string>, end = false): RawStream {
    const id = this.nextId;
    this.nextId += 2;
    const closed = new Promise<StreamEnd & { atMs: number }>((resolve) => this.waiting.set(id, (e) => resolve({ ...e, atMs: performance.now() })));
    this.socket.write(frame(HEADERS, END_HEADERS | (end ? END_STREAM : 0), id, hpackLiterals(headers)));
    return { id, closed };
  }

  /** Sends `bytes` on a stream as DATA frames of `frameBytes` each (the last may be shorter). */
  data(id: number, bytes: Buffer, frameBytes: number, end: boolean): void {
    const frames: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += frameBytes) {
      const last = at + frameBytes >= bytes.length;
      frames.push(frame(DATA, last && end ? END_STREAM : 0, id, bytes.subarray(at, at + frameBytes)));
    }
    if (bytes.length === 0 && end) frames.push(frame(DATA, END_STREAM, id));
    this.socket.write(Buffer.concat(frames));
  }

  /** RST_STREAM from the client (8 = CANCEL). */
  reset(id: number, code = 8): void {
    const payload = Buffer.alloc(4);
    payload.writeUInt32BE(code);
    this.socket.write(frame(RST_STREAM, 0, id, payload));
  }

  /** Writes whatever `write` sends as one TCP write (so the server reads it in one go). */
  batch(write: () => void): void {
    this.socket.cork();
    write();
    this.socket.uncork();
  }

  /** Resolves once everything written so far has been handed to the kernel. */
  flushed(): Promise<void> {
    return new Promise((resolve) => this.socket.write(Buffer.alloc(0), () => resolve()));
  }

  get destroyed(): boolean {
    return this.socket.destroyed;
  }

  close(): void {
    this.socket.destroy();
  }

  private endAll(end: StreamEnd): void {
    for (const done of this.waiting.values()) done(end);
    this.waiting.clear();
  }

  private end(id: number, end: StreamEnd): void {
    const done = this.waiting.get(id);
    if (!done) return;
    this.waiting.delete(id);
    done(end);
  }

  private read(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 9) {
      const length = this.pending.readUIntBE(0, 3);
      if (this.pending.length < 9 + length) return;
      const type = this.pending[3]!;
      const flags = this.pending[4]!;
      const id = this.pending.readUInt32BE(5) & 0x7fff_ffff;
      const payload = this.pending.subarray(9, 9 + length);
      this.pending = this.pending.subarray(9 + length);
      if (type === SETTINGS && !(flags & ACK)) this.socket.write(frame(SETTINGS, ACK, 0));
      else if (type === PING && !(flags & ACK)) this.socket.write(frame(PING, ACK, 0, Buffer.from(payload)));
      else if ((type === HEADERS || type === DATA) && flags & END_STREAM) this.end(id, { kind: "ended" });
      else if (type === RST_STREAM) {
        const code = payload.readUInt32BE(0);
        this.resets.set(id, code);
        this.end(id, { kind: "reset", code });
      } else if (type === GOAWAY) {
        this.goaway = payload.readUInt32BE(4);
        const lastId = payload.readUInt32BE(0) & 0x7fff_ffff;
        for (const streamId of [...this.waiting.keys()]) if (streamId > lastId) this.end(streamId, { kind: "goaway", code: this.goaway });
      }
    }
  }
}

/** A gRPC message's 5-byte header (not compressed) for `length` bytes. */
export function grpcPrefix(length: number): Buffer {
  const out = Buffer.alloc(5);
  out.writeUInt32BE(length, 1);
  return out;
}
