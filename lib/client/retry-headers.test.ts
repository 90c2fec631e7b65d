import { describe, expect, it } from "vitest";
import { legacyResetMs, parseRateLimitList, rateLimitResetMs, retryAfterMs, serverDelayMs } from "./retry-headers";

const NOW = Date.parse("2026-12-01T12:00:00Z");

describe("Retry-After", () => {
  it("reads delay-seconds", () => {
    expect(retryAfterMs("1", NOW)).toBe(1000);
    expect(retryAfterMs(" 120 ", NOW)).toBe(120_000);
    expect(retryAfterMs("0", NOW)).toBe(0);
  });

  it("reads an HTTP date against the answer's own Date header, so a skewed client clock waits what the server meant", () => {
    const server = "Tue, 01 Dec 2026 12:00:00 GMT";
    const at = "Tue, 01 Dec 2026 12:00:05 GMT";
    // The client's clock is 3 s ahead of the server's: measured against it, it would wait 2 s.
    expect(retryAfterMs(at, NOW + 3000, server)).toBe(5000);
    expect(retryAfterMs(at, NOW)).toBe(5000);
    expect(retryAfterMs("Tue, 01 Dec 2026 11:59:00 GMT", NOW)).toBe(0);
  });

  it("ignores what it cannot read", () => {
    expect(retryAfterMs(null, NOW)).toBeNull();
    expect(retryAfterMs("soon", NOW)).toBeNull();
    expect(retryAfterMs("-5", NOW)).toBeNull();
  });
});

describe("RateLimit (structured)", () => {
  it("parses names, quoted names and parameters", () => {
    expect(parseRateLimitList('"free-api_key";r=0;t=17, "a, b";r=5;t=3, tok;r=1')).toEqual([
      { name: "free-api_key", params: { r: "0", t: "17" } },
      { name: "a, b", params: { r: "5", t: "3" } },
      { name: "tok", params: { r: "1" } },
    ]);
  });

  it("waits for the longest exhausted limit, else the longest reset", () => {
    expect(rateLimitResetMs('"a";r=0;t=2, "b";r=4;t=9')).toBe(2000);
    expect(rateLimitResetMs('"a";r=0;t=2, "b";r=0;t=7')).toBe(7000);
    expect(rateLimitResetMs('"a";r=3;t=2, "b";r=4;t=9')).toBe(9000);
    expect(rateLimitResetMs('"a";r=3')).toBeNull();
  });
});

describe("legacy RateLimit-Reset", () => {
  it("reads delta seconds, and a Unix time where only one can be meant", () => {
    expect(legacyResetMs("17", NOW)).toBe(17_000);
    expect(legacyResetMs(String(NOW / 1000 + 30), NOW)).toBe(30_000);
    expect(legacyResetMs("x", NOW)).toBeNull();
  });
});

describe("precedence", () => {
  it("Retry-After, then RateLimit, then RateLimit-Reset", () => {
    const h = (init: Record<string, string>) => new Headers(init);
    expect(serverDelayMs(h({ "retry-after": "4", ratelimit: '"a";r=0;t=9', "ratelimit-reset": "11" }), NOW)).toBe(4000);
    expect(serverDelayMs(h({ ratelimit: '"a";r=0;t=9', "ratelimit-reset": "11" }), NOW)).toBe(9000);
    expect(serverDelayMs(h({ "ratelimit-reset": "11" }), NOW)).toBe(11_000);
    expect(serverDelayMs(h({}), NOW)).toBeNull();
  });
});
