import { describe, expect, it } from "vitest";
import { parseRateLimitRequestJson, rateLimitResponseJson } from "./json";

describe("RateLimitRequest from protobuf JSON", () => {
  it("takes JSON names and proto names, integers as numbers or decimal strings, enums by name or number, null as absent", () => {
    const json = {
      domain: "edge",
      hitsAddend: "3",
      descriptors: [
        { entries: [{ key: "k", value: "v" }], limit: { requestsPerUnit: 5, unit: "MINUTE" }, hitsAddend: 2 },
        { entries: [{ key: "k" }], limit: { requests_per_unit: "7", unit: 4 }, hits_addend: "0" },
        { entries: null, limit: null },
      ],
    };
    expect(parseRateLimitRequestJson(json)).toEqual({
      ok: true,
      request: {
        domain: "edge",
        hits_addend: 3,
        descriptors: [
          { entries: [{ key: "k", value: "v" }], limit: { requests_per_unit: 5, unit: "MINUTE" }, hits_addend: { value: 2 } },
          { entries: [{ key: "k" }], limit: { requests_per_unit: 7, unit: "DAY" }, hits_addend: { value: 0 } },
          {},
        ],
      },
    });
  });

  it("refuses an unknown field, a field under both names, a wrong type or range, naming the field", () => {
    const cases: [unknown, string][] = [
      [{ domain: "d", extra: 1 }, "extra"],
      [{ domain: "d", hitsAddend: 1, hits_addend: 1 }, "hits_addend"],
      [{ domain: 7 }, "domain"],
      [{ hitsAddend: 4_294_967_296 }, "hitsAddend"],
      [{ hitsAddend: 1.5 }, "hitsAddend"],
      [{ descriptors: {} }, "descriptors"],
      [{ descriptors: [{ entries: [{ key: "k", value: 1 }] }] }, "descriptors[0].entries[0].value"],
      [{ descriptors: [{ limit: { unit: "WEEKS" } }] }, "descriptors[0].limit.unit"],
      [{ descriptors: [{ hitsAddend: "-1" }] }, "descriptors[0].hitsAddend"],
      [{ descriptors: Array.from({ length: 101 }, () => ({})) }, "descriptors"],
      ["text", "(body)"],
    ];
    for (const [body, field] of cases) {
      const r = parseRateLimitRequestJson(body);
      expect(r.ok ? null : r.error.field, JSON.stringify(body)).toBe(field);
      expect(r.ok ? "" : r.error.message).toMatch(new RegExp(`^${field.replace(/[[\]().]/g, "\\$&")}: `));
    }
  });
});

describe("RateLimitResponse as protobuf JSON", () => {
  it("writes camelCase names, enum names, a Duration string, and leaves zero values out", () => {
    expect(
      rateLimitResponseJson({
        overall_code: "OVER_LIMIT",
        statuses: [
          { code: "OVER_LIMIT", current_limit: { name: "per-user", requests_per_unit: 10, unit: "SECOND" }, limit_remaining: 0, duration_until_reset: { seconds: 1, nanos: 0 } },
          { code: "OK", limit_remaining: 0 },
        ],
        response_headers_to_add: [{ key: "x-sluice-reason", value: "store_unavailable" }],
        request_headers_to_add: [],
      }),
    ).toEqual({
      overallCode: "OVER_LIMIT",
      statuses: [{ code: "OVER_LIMIT", currentLimit: { name: "per-user", requestsPerUnit: 10, unit: "SECOND" }, durationUntilReset: "1s" }, { code: "OK" }],
      responseHeadersToAdd: [{ key: "x-sluice-reason", value: "store_unavailable" }],
    });
  });
});
