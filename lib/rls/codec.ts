/**
 * The protobuf wire format of the few messages the rate limit service reads and writes, by hand:
 * `RateLimitRequest` in, `RateLimitResponse` out (envoy.service.ratelimit.v3, with the newer
 * descriptor `hits_addend` and unit `WEEK` that lib/rls/protos.ts adds to the bundled protos), and
 * gRPC health's `HealthCheckRequest` / `HealthCheckResponse`. The decoded objects have exactly the
 * shape of lib/rls/messages.ts, the one proto-loader gives with lib/rls/protos.ts's options
 * (snake_case, enums by name, 64-bit integers as numbers, absent fields absent), and a response encodes to the same bytes protobufjs writes for
 * it (fields in number order, every field that is set written, zeros included): lib/rls/codec.test.ts
 * holds both against protobufjs on random messages.
 *
 * Why by hand: the serving side reads one small request and writes one small response per call;
 * the reflection-driven encoders and the toObject/fromObject conversions cost more than the
 * decision itself. Unknown fields are skipped by wire type, as protobuf requires; malformed bytes
 * (a truncated field, a length past the end, a wrong wire type for a known field, a uint32 field
 * above 2^32−1) throw ProtoDecodeError, which the server answers INVALID_ARGUMENT.
 */
import type { RlsCode, RlsDescriptorMessage, RlsEntryMessage, RlsHeader, RlsRequestMessage, RlsResponseMessage, RlsUnit } from "./messages";

export class ProtoDecodeError extends Error {
  constructor(message: string) {
    super(`malformed message: ${message}`);
    this.name = "ProtoDecodeError";
  }
}

const VARINT = 0;
const FIXED64 = 1;
const BYTES = 2;
const START_GROUP = 3;
const END_GROUP = 4;
const FIXED32 = 5;
const UINT32_MAX = 0xffff_ffff;

/** RateLimitOverride's unit (envoy.type.v3.RateLimitUnit), by number. */
const OVERRIDE_UNITS = ["UNKNOWN", "SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR", "WEEK"];
const CODES: Readonly<Record<RlsCode, number>> = { UNKNOWN: 0, OK: 1, OVER_LIMIT: 2 };
const UNITS: Readonly<Record<RlsUnit, number>> = { UNKNOWN: 0, SECOND: 1, MINUTE: 2, HOUR: 3, DAY: 4, MONTH: 5, YEAR: 6, WEEK: 7 };

// ---- Reading

/** A cursor over one message's bytes. */
class Reader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  /** A varint (at most 10 bytes, 64 bits) as a number: exact up to 2^53, above it the nearest double, as protobufjs with `longs: Number`. */
  varint(): number {
    const { buf, end } = this;
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= end) throw new ProtoDecodeError("truncated varint");
      const b = buf[this.pos++]!;
      if (i === 9 && b > 1) throw new ProtoDecodeError("varint over 64 bits");
      result += (b & 0x7f) * scale;
      if (b < 0x80) return result;
      scale *= 128;
    }
    throw new ProtoDecodeError("varint longer than 10 bytes");
  }

  /**
   * A uint32 field, exactly: a varint above 2^32−1 is refused, never cut to its low 32 bits (a
   * `hits_addend` of 2^64−1 became a cost of 0, #30.8). Rounding above 2^53 is monotonic, so the comparison is exact.
   */
  uint32(field: string): number {
    const value = this.varint();
    if (value > UINT32_MAX) throw new ProtoDecodeError(`${field}: a varint above ${UINT32_MAX}, outside uint32`);
    return value;
  }

  /** A length-delimited field's bounds; the cursor moves past it. */
  bytes(): [number, number] {
    const length = this.varint();
    const start = this.pos;
    if (length > this.end - start) throw new ProtoDecodeError("length past the end of the message");
    this.pos = start + length;
    return [start, this.pos];
  }

  string(): string {
    const [start, end] = this.bytes();
    return this.buf.toString("utf8", start, end);
  }

  /** Skips a field of an unknown number (groups included, as protobuf readers do). */
  skip(wireType: number, depth = 0): void {
    switch (wireType) {
      case VARINT:
        this.varint();
        return;
      case FIXED64:
        this.advance(8);
        return;
      case BYTES:
        this.bytes();
        return;
      case FIXED32:
        this.advance(4);
        return;
      case START_GROUP: {
        if (depth > 32) throw new ProtoDecodeError("groups nested too deep");
        for (;;) {
          const tag = this.varint();
          if ((tag & 7) === END_GROUP) return;
          this.skip(tag & 7, depth + 1);
        }
      }
      default:
        throw new ProtoDecodeError(`wire type ${wireType}`);
    }
  }

  private advance(n: number): void {
    if (n > this.end - this.pos) throw new ProtoDecodeError("truncated fixed-width field");
    this.pos += n;
  }
}

/** Reads a message's fields; `field` handles the known numbers (and returns false for the others). */
function readFields(r: Reader, field: (number: number, wireType: number) => boolean): void {
  while (r.pos < r.end) {
    const tag = r.varint();
    const number = Math.floor(tag / 8);
    const wireType = tag & 7;
    if (number === 0) throw new ProtoDecodeError("field number 0");
    if (!field(number, wireType)) r.skip(wireType);
  }
}

function expectWire(wireType: number, expected: number, what: string): void {
  if (wireType !== expected) throw new ProtoDecodeError(`${what}: wire type ${wireType}, expected ${expected}`);
}

function sub(r: Reader): Reader {
  const [start, end] = r.bytes();
  return new Reader(r.buf, start, end);
}

function readEntry(r: Reader): RlsEntryMessage {
  const entry: RlsEntryMessage = {};
  readFields(r, (n, w) => {
    if (n === 1) {
      expectWire(w, BYTES, "entry.key");
      entry.key = r.string();
    } else if (n === 2) {
      expectWire(w, BYTES, "entry.value");
      entry.value = r.string();
    } else return false;
    return true;
  });
  return entry;
}

function readDescriptor(r: Reader): RlsDescriptorMessage {
  const d: RlsDescriptorMessage = {};
  readFields(r, (n, w) => {
    if (n === 1) {
      expectWire(w, BYTES, "descriptor.entries");
      (d.entries ??= []).push(readEntry(sub(r)));
    } else if (n === 2) {
      expectWire(w, BYTES, "descriptor.limit");
      const limit: NonNullable<RlsDescriptorMessage["limit"]> = {};
      const lr = sub(r);
      readFields(lr, (ln, lw) => {
        if (ln === 1) {
          expectWire(lw, VARINT, "limit.requests_per_unit");
          limit.requests_per_unit = lr.uint32("descriptor.limit.requests_per_unit");
        } else if (ln === 2) {
          expectWire(lw, VARINT, "limit.unit");
          const unit = lr.varint();
          limit.unit = OVERRIDE_UNITS[unit] ?? String(unit);
        } else return false;
        return true;
      });
      d.limit = limit;
    } else if (n === 3) {
      expectWire(w, BYTES, "descriptor.hits_addend");
      const addend: { value?: number } = {};
      const ar = sub(r);
      readFields(ar, (an, aw) => {
        if (an !== 1) return false;
        expectWire(aw, VARINT, "hits_addend.value");
        addend.value = ar.varint();
        return true;
      });
      d.hits_addend = addend;
    } else return false;
    return true;
  });
  return d;
}

/** Decodes a RateLimitRequest (the bytes after the gRPC frame header). Throws ProtoDecodeError. */
export function decodeRateLimitRequest(bytes: Buffer): RlsRequestMessage {
  const r = new Reader(bytes, 0, bytes.length);
  const message: RlsRequestMessage = {};
  readFields(r, (n, w) => {
    if (n === 1) {
      expectWire(w, BYTES, "domain");
      message.domain = r.string();
    } else if (n === 2) {
      expectWire(w, BYTES, "descriptors");
      (message.descriptors ??= []).push(readDescriptor(sub(r)));
    } else if (n === 3) {
      expectWire(w, VARINT, "hits_addend");
      message.hits_addend = r.uint32("hits_addend");
    } else return false;
    return true;
  });
  return message;
}

/** Decodes a HealthCheckRequest. Throws ProtoDecodeError. */
export function decodeHealthCheckRequest(bytes: Buffer): { service?: string } {
  const r = new Reader(bytes, 0, bytes.length);
  const message: { service?: string } = {};
  readFields(r, (n, w) => {
    if (n !== 1) return false;
    expectWire(w, BYTES, "service");
    message.service = r.string();
    return true;
  });
  return message;
}

// ---- Writing: sizes first (nested lengths precede their contents), then one buffer.

function varintSize(n: number): number {
  let size = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** A string field's size, its tag included; the UTF-8 length is kept for the write. */
function stringSize(byteLength: number): number {
  return 1 + varintSize(byteLength) + byteLength;
}

class Writer {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start: number,
  ) {
    this.pos = start;
  }

  byte(b: number): void {
    this.buf[this.pos++] = b;
  }

  varint(n: number): void {
    while (n >= 128) {
      this.buf[this.pos++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
  }

  string(tag: number, value: string, byteLength: number): void {
    this.byte(tag);
    this.varint(byteLength);
    this.pos += this.buf.write(value, this.pos, byteLength, "utf8");
  }
}

interface HeaderSizes {
  key: number;
  value: number;
  body: number;
}

function headerSizes(headers: readonly RlsHeader[]): HeaderSizes[] {
  return headers.map((h) => {
    const key = Buffer.byteLength(h.key, "utf8");
    const value = Buffer.byteLength(h.value, "utf8");
    return { key, value, body: stringSize(key) + stringSize(value) };
  });
}

const headersSize = (sizes: readonly HeaderSizes[]) => sizes.reduce((sum, s) => sum + 1 + varintSize(s.body) + s.body, 0);

function writeHeaders(w: Writer, tag: number, headers: readonly RlsHeader[], sizes: readonly HeaderSizes[]): void {
  for (let i = 0; i < headers.length; i++) {
    const s = sizes[i]!;
    w.byte(tag);
    w.varint(s.body);
    w.string(0x0a, headers[i]!.key, s.key);
    w.string(0x12, headers[i]!.value, s.value);
  }
}

/** Values written as varints must be non-negative integers (the mapping clamps them to uint32 and whole seconds). */
function unsigned(n: number, what: string): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${what}: expected a non-negative integer, got ${n}`);
  return n;
}

/**
 * Encodes a RateLimitResponse, framed for gRPC when `framed` (the 5-byte header: not compressed,
 * big-endian length), so the answer is one buffer and one write.
 */
export function encodeRateLimitResponse(message: RlsResponseMessage, framed = true): Buffer {
  const offset = framed ? 5 : 0;
  // Pass 1: sizes.
  const statusSizes: { body: number; limit: number; limitName: number; reset: number }[] = [];
  let size = message.overall_code === undefined ? 0 : 1 + varintSize(CODES[message.overall_code]);
  for (const s of message.statuses) {
    let body = 1 + varintSize(CODES[s.code]);
    let limit = 0;
    let limitName = 0;
    if (s.current_limit) {
      limitName = Buffer.byteLength(s.current_limit.name, "utf8");
      limit = 1 + varintSize(unsigned(s.current_limit.requests_per_unit, "requests_per_unit")) + 1 + varintSize(UNITS[s.current_limit.unit]) + stringSize(limitName);
      body += 1 + varintSize(limit) + limit;
    }
    body += 1 + varintSize(unsigned(s.limit_remaining, "limit_remaining"));
    let reset = 0;
    if (s.duration_until_reset) {
      reset = 1 + varintSize(unsigned(s.duration_until_reset.seconds, "duration_until_reset.seconds"));
      if (s.duration_until_reset.nanos !== undefined) reset += 1 + varintSize(unsigned(s.duration_until_reset.nanos, "duration_until_reset.nanos"));
      body += 1 + varintSize(reset) + reset;
    }
    statusSizes.push({ body, limit, limitName, reset });
    size += 1 + varintSize(body) + body;
  }
  const responseHeaders = headerSizes(message.response_headers_to_add);
  const requestHeaders = headerSizes(message.request_headers_to_add);
  size += headersSize(responseHeaders) + headersSize(requestHeaders);

  // Pass 2: bytes.
  const buf = Buffer.allocUnsafe(offset + size);
  if (framed) {
    buf[0] = 0;
    buf.writeUInt32BE(size, 1);
  }
  const w = new Writer(buf, offset);
  if (message.overall_code !== undefined) {
    w.byte(0x08);
    w.varint(CODES[message.overall_code]);
  }
  for (let i = 0; i < message.statuses.length; i++) {
    const s = message.statuses[i]!;
    const z = statusSizes[i]!;
    w.byte(0x12);
    w.varint(z.body);
    w.byte(0x08);
    w.varint(CODES[s.code]);
    if (s.current_limit) {
      w.byte(0x12);
      w.varint(z.limit);
      w.byte(0x08);
      w.varint(s.current_limit.requests_per_unit);
      w.byte(0x10);
      w.varint(UNITS[s.current_limit.unit]);
      w.string(0x1a, s.current_limit.name, z.limitName);
    }
    w.byte(0x18);
    w.varint(s.limit_remaining);
    if (s.duration_until_reset) {
      w.byte(0x22);
      w.varint(z.reset);
      w.byte(0x08);
      w.varint(s.duration_until_reset.seconds);
      if (s.duration_until_reset.nanos !== undefined) {
        w.byte(0x10);
        w.varint(s.duration_until_reset.nanos);
      }
    }
  }
  writeHeaders(w, 0x1a, message.response_headers_to_add, responseHeaders);
  writeHeaders(w, 0x22, message.request_headers_to_add, requestHeaders);
  if (w.pos !== buf.length) throw new Error(`RateLimitResponse: wrote ${w.pos} of ${buf.length} bytes`);
  return buf;
}

export type HealthStatus = "UNKNOWN" | "SERVING" | "NOT_SERVING" | "SERVICE_UNKNOWN";
const HEALTH_STATUSES: Readonly<Record<HealthStatus, number>> = { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 };

/** Encodes a HealthCheckResponse (framed for gRPC when `framed`). */
export function encodeHealthCheckResponse(status: HealthStatus, framed = true): Buffer {
  const offset = framed ? 5 : 0;
  const buf = Buffer.allocUnsafe(offset + 2);
  if (framed) {
    buf[0] = 0;
    buf.writeUInt32BE(2, 1);
  }
  buf[offset] = 0x08;
  buf[offset + 1] = HEALTH_STATUSES[status];
  return buf;
}
