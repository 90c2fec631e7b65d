import { describe, expect, it } from "vitest";
import { rlsServiceDefinition } from "./protos";

describe("Envoy's RLS protos as loaded from @grpc/grpc-js-xds", () => {
  const method = rlsServiceDefinition().ShouldRateLimit!;

  it("decodes a descriptor's hits_addend sent as field 3 (what a current Envoy writes), which the bundled proto lacks", () => {
    // RateLimitRequest { domain: "sluice", descriptors: [{ entries: [{ key: "k", value: "v" }], hits_addend: { value: 5 } }], hits_addend: 2 },
    // written byte by byte so the test does not depend on the encoder under test.
    const entry = [0x0a, 1, 0x6b, 0x12, 1, 0x76];
    const uint64Value = [0x08, 5];
    const descriptor = [0x0a, entry.length, ...entry, 0x1a, uint64Value.length, ...uint64Value];
    const domain = [...Buffer.from("sluice")];
    const wire = Buffer.from([0x0a, domain.length, ...domain, 0x12, descriptor.length, ...descriptor, 0x18, 2]);
    expect(method.requestDeserialize(wire)).toEqual({ domain: "sluice", descriptors: [{ entries: [{ key: "k", value: "v" }], hits_addend: { value: 5 } }], hits_addend: 2 });
  });

  it("writes a WEEK unit as 7 and the response fields Envoy reads", () => {
    const bytes = method.responseSerialize({
      overall_code: "OVER_LIMIT",
      statuses: [{ code: "OVER_LIMIT", current_limit: { name: "w", requests_per_unit: 9, unit: "WEEK" }, limit_remaining: 0, duration_until_reset: { seconds: 17 } }],
      response_headers_to_add: [{ key: "Retry-After", value: "17" }],
    });
    // current_limit.unit is field 2 of RateLimit: tag 0x10, then the value.
    expect(bytes.includes(Buffer.from([0x10, 7]))).toBe(true);
    expect(method.responseDeserialize(bytes)).toMatchObject({
      overall_code: "OVER_LIMIT",
      statuses: [{ code: "OVER_LIMIT", current_limit: { unit: "WEEK", requests_per_unit: 9 }, duration_until_reset: { seconds: 17 } }],
      response_headers_to_add: [{ key: "Retry-After", value: "17" }],
    });
  });
});
