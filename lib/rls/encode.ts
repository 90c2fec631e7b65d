/**
 * Writing the protobuf wire format of the rate limit service's answers, by hand: `RateLimitResponse`
 * (envoy.service.ratelimit.v3) and gRPC health's `HealthCheckResponse` (the requests are read by
 * ./decode.ts). A response encodes to the same bytes protobufjs writes for it (fields in number
 * order, every field that is set written, zeros included): lib/rls/codec.test.ts holds both against
 * protobufjs on random messages.
 *
 * Why by hand: the serving side writes one small response per call; the reflection-driven encoders
 * and the toObject/fromObject conversions cost more than the decision itself.
 */
import type { RlsCode, RlsHeader, RlsResponseMessage, RlsUnit } from "./messages";

const CODES: Readonly<Record<RlsCode, number>> = { UNKNOWN: 0, OK: 1, OVER_LIMIT: 2 };
const UNITS: Readonly<Record<RlsUnit, number>> = { UNKNOWN: 0, SECOND: 1, MINUTE: 2, HOUR: 3, DAY: 4, MONTH: 5, YEAR: 6, WEEK: 7 };

// Sizes first (nested lengths precede their contents), then one buffer.

function varintSize(n: number): number {
  let size = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/**
 * A string's UTF-8 length. The strings here are short and almost always ASCII (header names and
 * values, limit names): a loop over them costs a third of what Buffer.byteLength and
 * Buffer#write's calls into C++ cost (11 strings of an answer: 0.5 against 1.9 µs), and for ASCII
 * the length is the string's own.
 */
function utf8Length(value: string): number {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) >= 0x80) return Buffer.byteLength(value, "utf8");
  return value.length;
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
    const { buf, pos } = this;
    if (byteLength === value.length) {
      // ASCII (utf8Length): one byte per character.
      for (let i = 0; i < byteLength; i++) buf[pos + i] = value.charCodeAt(i);
      this.pos = pos + byteLength;
    } else this.pos = pos + buf.write(value, pos, byteLength, "utf8");
  }
}

/*
 * The sizes pass keeps what the bytes pass needs (each string's UTF-8 length, each nested
 * message's length) in one array of numbers, in the order the bytes pass reads them back, instead
 * of an object per status and per header (#27): encoding is synchronous, so one array serves
 * every call.
 */
const sizes: number[] = [];

/** Header entries' sizes (key length, value length, entry length, per header) pushed to `sizes`; returns their total on the wire. */
function sizeHeaders(headers: readonly RlsHeader[]): number {
  let total = 0;
  for (let i = 0; i < headers.length; i++) {
    const key = utf8Length(headers[i]!.key);
    const value = utf8Length(headers[i]!.value);
    const body = stringSize(key) + stringSize(value);
    sizes.push(key, value, body);
    total += 1 + varintSize(body) + body;
  }
  return total;
}

/** Writes headers whose sizes start at `sizes[at]`; returns the index after them. */
function writeHeaders(w: Writer, tag: number, headers: readonly RlsHeader[], at: number): number {
  for (let i = 0; i < headers.length; i++, at += 3) {
    w.byte(tag);
    w.varint(sizes[at + 2]!);
    w.string(0x0a, headers[i]!.key, sizes[at]!);
    w.string(0x12, headers[i]!.value, sizes[at + 1]!);
  }
  return at;
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
  // Pass 1: sizes (per status: its body, its limit's body and name length, its reset's body).
  sizes.length = 0;
  let size = message.overall_code === undefined ? 0 : 1 + varintSize(CODES[message.overall_code]);
  for (const s of message.statuses) {
    let body = 1 + varintSize(CODES[s.code]);
    let limit = 0;
    let limitName = 0;
    if (s.current_limit) {
      limitName = utf8Length(s.current_limit.name);
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
    sizes.push(body, limit, limitName, reset);
    size += 1 + varintSize(body) + body;
  }
  size += sizeHeaders(message.response_headers_to_add);
  size += sizeHeaders(message.request_headers_to_add);

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
  let at = 0;
  for (let i = 0; i < message.statuses.length; i++, at += 4) {
    const s = message.statuses[i]!;
    w.byte(0x12);
    w.varint(sizes[at]!);
    w.byte(0x08);
    w.varint(CODES[s.code]);
    if (s.current_limit) {
      w.byte(0x12);
      w.varint(sizes[at + 1]!);
      w.byte(0x08);
      w.varint(s.current_limit.requests_per_unit);
      w.byte(0x10);
      w.varint(UNITS[s.current_limit.unit]);
      w.string(0x1a, s.current_limit.name, sizes[at + 2]!);
    }
    w.byte(0x18);
    w.varint(s.limit_remaining);
    if (s.duration_until_reset) {
      w.byte(0x22);
      w.varint(sizes[at + 3]!);
      w.byte(0x08);
      w.varint(s.duration_until_reset.seconds);
      if (s.duration_until_reset.nanos !== undefined) {
        w.byte(0x10);
        w.varint(s.duration_until_reset.nanos);
      }
    }
  }
  at = writeHeaders(w, 0x1a, message.response_headers_to_add, at);
  writeHeaders(w, 0x22, message.request_headers_to_add, at);
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
