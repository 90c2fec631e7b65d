/**
 * Reading the protobuf wire format of the few messages the rate limit service receives, by hand:
 * `RateLimitRequest` (envoy.service.ratelimit.v3, with the newer descriptor `hits_addend` and unit
 * `WEEK` that lib/rls/protos.ts adds to the bundled protos) and gRPC health's `HealthCheckRequest`.
 * The decoded objects have exactly the shape of lib/rls/messages.ts, the one proto-loader gives with
 * lib/rls/protos.ts's options (snake_case, enums by name, 64-bit integers as numbers, absent fields
 * absent): lib/rls/codec.test.ts holds them against protobufjs on random messages. The answers are
 * written by ./encode.ts.
 *
 * Why by hand: the serving side reads one small request per call; the reflection-driven decoders
 * and the toObject conversions cost more than the decision itself. Unknown fields are skipped by wire type, as protobuf requires; malformed bytes
 * (a truncated field, a length past the end, a wrong wire type for a known field, a uint32 field
 * above 2^32−1) throw ProtoDecodeError, which the server answers INVALID_ARGUMENT.
 */
import type { RlsDescriptorMessage, RlsEntryMessage, RlsRequestMessage } from "./messages";

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

/**
 * A range of a buffer as UTF-8, by Buffer's own `utf8Slice` where it has one (Node's internal binding
 * behind `toString("utf8", start, end)`, without that method's argument checks and encoding lookup:
 * a third of a request's decoding time went there, #27); the same string either way, malformed
 * bytes included (U+FFFD).
 */
type SliceableBuffer = Buffer & { utf8Slice?(start: number, end: number): string };
const utf8Slice: (buf: Buffer, start: number, end: number) => string =
  typeof (Buffer.prototype as SliceableBuffer).utf8Slice === "function"
    ? (buf, start, end) => (buf as SliceableBuffer).utf8Slice!(start, end)
    : (buf, start, end) => buf.toString("utf8", start, end);

/**
 * Entry keys (and the method values) every call repeats: read as the constant string itself, so a
 * call allocates no copy of them and their hashes are computed once (they are looked up as names
 * further on). By length, then byte by byte.
 */
const KNOWN_STRINGS: ReadonlyMap<number, readonly string[]> = (() => {
  const words = ["api_key", "tenant", "remote_address", "masked_remote_address", "operation", "method", "path", "sluice_token", "generic_key", "header_match", "destination_cluster", "source_cluster", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
  const byLength = new Map<number, string[]>();
  for (const w of words) byLength.set(w.length, [...(byLength.get(w.length) ?? []), w]);
  return byLength;
})();

function knownString(buf: Buffer, start: number, end: number): string | undefined {
  const candidates = KNOWN_STRINGS.get(end - start);
  if (candidates === undefined) return undefined;
  for (const word of candidates) {
    let i = 0;
    while (i < word.length && buf[start + i] === word.charCodeAt(i)) i++;
    if (i === word.length) return word;
  }
  return undefined;
}

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
    return utf8Slice(this.buf, start, end);
  }

  /** A string that is most often one of KNOWN_STRINGS (an entry's key, a method): that constant, else read. */
  word(): string {
    const [start, end] = this.bytes();
    return knownString(this.buf, start, end) ?? utf8Slice(this.buf, start, end);
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

/**
 * Each reader below is one loop over its message's fields: a field of a known number is read (its
 * wire type checked), any other skipped. No callback per message: the decoder runs once per gRPC
 * call, and a closure per nested message was most of its allocations (#27).
 */

/** The next field's number and wire type (tag >>> 3, tag & 7); field number 0 is malformed. */
function nextTag(r: Reader): number {
  const tag = r.varint();
  if (tag < 8) throw new ProtoDecodeError("field number 0");
  return tag;
}

/** Splits a tag (a varint up to 2^64, so no 32-bit shifts) into its number. */
const fieldNumber = (tag: number) => Math.floor(tag / 8);

function expectWire(wireType: number, expected: number, what: string): void {
  if (wireType !== expected) throw new ProtoDecodeError(`${what}: wire type ${wireType}, expected ${expected}`);
}

function sub(r: Reader): Reader {
  const [start, end] = r.bytes();
  return new Reader(r.buf, start, end);
}

function readEntry(r: Reader): RlsEntryMessage {
  const entry: RlsEntryMessage = {};
  while (r.pos < r.end) {
    const tag = nextTag(r);
    const n = fieldNumber(tag);
    const w = tag & 7;
    if (n === 1) {
      expectWire(w, BYTES, "entry.key");
      entry.key = r.word();
    } else if (n === 2) {
      expectWire(w, BYTES, "entry.value");
      entry.value = r.word();
    } else r.skip(w);
  }
  return entry;
}

function readLimit(r: Reader): NonNullable<RlsDescriptorMessage["limit"]> {
  const limit: NonNullable<RlsDescriptorMessage["limit"]> = {};
  while (r.pos < r.end) {
    const tag = nextTag(r);
    const n = fieldNumber(tag);
    const w = tag & 7;
    if (n === 1) {
      expectWire(w, VARINT, "limit.requests_per_unit");
      limit.requests_per_unit = r.uint32("descriptor.limit.requests_per_unit");
    } else if (n === 2) {
      expectWire(w, VARINT, "limit.unit");
      const unit = r.varint();
      limit.unit = OVERRIDE_UNITS[unit] ?? String(unit);
    } else r.skip(w);
  }
  return limit;
}

function readAddend(r: Reader): { value?: number } {
  const addend: { value?: number } = {};
  while (r.pos < r.end) {
    const tag = nextTag(r);
    const w = tag & 7;
    if (fieldNumber(tag) === 1) {
      expectWire(w, VARINT, "hits_addend.value");
      addend.value = r.varint();
    } else r.skip(w);
  }
  return addend;
}

function readDescriptor(r: Reader): RlsDescriptorMessage {
  const d: RlsDescriptorMessage = {};
  while (r.pos < r.end) {
    const tag = nextTag(r);
    const n = fieldNumber(tag);
    const w = tag & 7;
    if (n === 1) {
      expectWire(w, BYTES, "descriptor.entries");
      (d.entries ??= []).push(readEntry(sub(r)));
    } else if (n === 2) {
      expectWire(w, BYTES, "descriptor.limit");
      d.limit = readLimit(sub(r));
    } else if (n === 3) {
      expectWire(w, BYTES, "descriptor.hits_addend");
      d.hits_addend = readAddend(sub(r));
    } else r.skip(w);
  }
  return d;
}

/** Decodes a RateLimitRequest (the bytes after the gRPC frame header). Throws ProtoDecodeError. */
export function decodeRateLimitRequest(bytes: Buffer): RlsRequestMessage {
  const r = new Reader(bytes, 0, bytes.length);
  const message: RlsRequestMessage = {};
  while (r.pos < r.end) {
    const tag = nextTag(r);
    const n = fieldNumber(tag);
    const w = tag & 7;
    if (n === 1) {
      expectWire(w, BYTES, "domain");
      message.domain = r.string();
    } else if (n === 2) {
      expectWire(w, BYTES, "descriptors");
      (message.descriptors ??= []).push(readDescriptor(sub(r)));
    } else if (n === 3) {
      expectWire(w, VARINT, "hits_addend");
      message.hits_addend = r.uint32("hits_addend");
    } else r.skip(w);
  }
  return message;
}

/** Decodes a HealthCheckRequest. Throws ProtoDecodeError. */
export function decodeHealthCheckRequest(bytes: Buffer): { service?: string } {
  const r = new Reader(bytes, 0, bytes.length);
  const message: { service?: string } = {};
  while (r.pos < r.end) {
    const tag = nextTag(r);
    const w = tag & 7;
    if (fieldNumber(tag) === 1) {
      expectWire(w, BYTES, "service");
      message.service = r.string();
    } else r.skip(w);
  }
  return message;
}
