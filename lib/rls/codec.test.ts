/**
 * The hand-written codec against protobufjs, through the definitions grpc-js clients use
 * (lib/rls/protos.ts): what protobufjs writes decodes to what protobufjs reads, and what the codec
 * writes is byte for byte what protobufjs writes, on random messages.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeHealthCheckRequest, decodeRateLimitRequest, ProtoDecodeError } from "./decode";
import { encodeHealthCheckResponse, encodeRateLimitResponse } from "./encode";
import { healthServiceDefinition, rlsServiceDefinition, type RlsCode, type RlsRequestMessage, type RlsResponseMessage, type RlsUnit } from "./protos";

const rls = rlsServiceDefinition().ShouldRateLimit!;
const health = healthServiceDefinition().Check!;

const text = fc.string({ unit: "grapheme", maxLength: 40 });
const uint32 = fc.integer({ min: 0, max: 0xffff_ffff });
const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const overrideUnit = fc.constantFrom("UNKNOWN", "SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR", "WEEK");
/** Drops undefined properties, as a decoded message has none. */
const clean = <T extends object>(o: T): T => JSON.parse(JSON.stringify(o)) as T;

const request: fc.Arbitrary<RlsRequestMessage> = fc
  .record({
    domain: optional(text),
    descriptors: optional(
      fc.array(
        fc.record({
          entries: optional(fc.array(fc.record({ key: optional(text), value: optional(text) }), { maxLength: 5 })),
          limit: optional(fc.record({ requests_per_unit: optional(uint32), unit: optional(overrideUnit) })),
          hits_addend: optional(fc.record({ value: optional(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })) })),
        }),
        { maxLength: 5 },
      ),
    ),
    hits_addend: optional(uint32),
  })
  .map(clean);

const code = fc.constantFrom<RlsCode>("UNKNOWN", "OK", "OVER_LIMIT");
const unit = fc.constantFrom<RlsUnit>("UNKNOWN", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR");
const header = fc.record({ key: text, value: text });
const response: fc.Arbitrary<RlsResponseMessage> = fc
  .record({
    overall_code: code,
    statuses: fc.array(
      fc.record({
        code,
        current_limit: optional(fc.record({ name: text, requests_per_unit: uint32, unit })),
        limit_remaining: uint32,
        duration_until_reset: optional(fc.record({ seconds: fc.integer({ min: 0, max: 2 ** 40 }), nanos: optional(fc.integer({ min: 0, max: 999_999_999 })) })),
      }),
      { maxLength: 5 },
    ),
    response_headers_to_add: fc.array(header, { maxLength: 6 }),
    request_headers_to_add: fc.array(header, { maxLength: 3 }),
  })
  .map(clean);

describe("the RLS codec", () => {
  it("decodes what protobufjs encodes into what protobufjs decodes", () => {
    fc.assert(
      fc.property(request, (message) => {
        const bytes = rls.requestSerialize(message);
        expect(decodeRateLimitRequest(bytes)).toEqual(clean(rls.requestDeserialize(bytes) as object));
      }),
      { numRuns: 500 },
    );
  });

  it("encodes a response to exactly protobufjs's bytes, framed for gRPC", () => {
    fc.assert(
      fc.property(response, (message) => {
        const expected = rls.responseSerialize(message);
        expect(encodeRateLimitResponse(message, false).equals(expected)).toBe(true);
        const framed = encodeRateLimitResponse(message);
        expect(framed[0]).toBe(0);
        expect(framed.readUInt32BE(1)).toBe(expected.length);
        expect(framed.subarray(5).equals(expected)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it("skips unknown fields of every wire type, as protobuf requires", () => {
    // domain "a", then field 9 as varint, fixed64, bytes, a group holding a varint, and fixed32.
    const wire = Buffer.from([0x0a, 1, 0x61, 0x48, 0x96, 0x01, 0x49, 1, 2, 3, 4, 5, 6, 7, 8, 0x4a, 2, 0xff, 0xff, 0x4b, 0x08, 1, 0x4c, 0x4d, 1, 2, 3, 4, 0x18, 3]);
    expect(decodeRateLimitRequest(wire)).toEqual({ domain: "a", hits_addend: 3 });
  });

  it("refuses malformed bytes with ProtoDecodeError, never another exception", () => {
    const cases = [
      [0xff, 0xff, 0xff, 0xff], // a varint cut short
      [0x0a, 10, 0x61], // a length past the end
      [0x08, 1], // domain as a varint
      [0x12, 2, 0x0a, 5], // an entry past its descriptor's end
      [0x00, 1], // field number 0
      [0x4e], // wire type 6
    ];
    for (const bytes of cases) expect(() => decodeRateLimitRequest(Buffer.from(bytes))).toThrow(ProtoDecodeError);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        try {
          decodeRateLimitRequest(Buffer.from(bytes));
        } catch (error) {
          expect(error).toBeInstanceOf(ProtoDecodeError);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it("reads a uint32 field exactly: 2^32−1 is taken, anything above it (2^32, 2^64−1) is refused, never wrapped", () => {
    // hits_addend is field 3 of RateLimitRequest (tag 0x18), uint32.
    const addend = (...varint: number[]) => Buffer.from([0x18, ...varint]);
    expect(decodeRateLimitRequest(addend(0xff, 0xff, 0xff, 0xff, 0x0f))).toEqual({ hits_addend: 0xffff_ffff });
    // The same value in 10 bytes (padded with continuation bits) is still 2^32−1, and ten bytes of zero are 0.
    expect(decodeRateLimitRequest(addend(0xff, 0xff, 0xff, 0xff, 0x8f, 0x80, 0x80, 0x80, 0x80, 0x00))).toEqual({ hits_addend: 0xffff_ffff });
    expect(decodeRateLimitRequest(addend(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00))).toEqual({ hits_addend: 0 });
    const refused: [number[], RegExp][] = [
      [[0x80, 0x80, 0x80, 0x80, 0x10], /hits_addend: a varint above 4294967295, outside uint32/], // 2^32
      [[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], /hits_addend: a varint above 4294967295/], // 2^64−1
      [[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], /hits_addend: a varint above 4294967295/], // 2^63
      [[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02], /varint over 64 bits/],
      [[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00], /varint over 64 bits/],
      [[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], /varint over 64 bits/],
      [[0xff, 0xff, 0xff, 0xff], /truncated varint/],
      [[0x80], /truncated varint/],
      [[], /truncated varint/],
    ];
    for (const [varint, message] of refused) {
      expect(() => decodeRateLimitRequest(addend(...varint))).toThrow(ProtoDecodeError);
      expect(() => decodeRateLimitRequest(addend(...varint))).toThrow(message);
    }
    // protobufjs agrees on the largest value taken.
    expect(rls.requestDeserialize(addend(0xff, 0xff, 0xff, 0xff, 0x0f))).toMatchObject({ hits_addend: 0xffff_ffff });
    // A descriptor's limit override is uint32 too: RateLimitDescriptor { limit: { requests_per_unit: 2^32 } }.
    const limit = [0x08, 0x80, 0x80, 0x80, 0x80, 0x10];
    const descriptor = [0x12, limit.length, ...limit];
    expect(() => decodeRateLimitRequest(Buffer.from([0x12, descriptor.length, ...descriptor]))).toThrow(/descriptor\.limit\.requests_per_unit: a varint above 4294967295/);
  });

  it("speaks gRPC health like protobufjs", () => {
    for (const service of ["", "envoy.service.ratelimit.v3.RateLimitService", "ü"]) {
      const bytes = health.requestSerialize({ service });
      expect(decodeHealthCheckRequest(bytes)).toEqual(clean(health.requestDeserialize(bytes) as object));
    }
    for (const status of ["SERVING", "NOT_SERVING"] as const) {
      expect(encodeHealthCheckResponse(status, false).equals(health.responseSerialize({ status }))).toBe(true);
    }
  });
});
