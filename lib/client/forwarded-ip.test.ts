import { describe, expect, it } from "vitest";
import { forwardedIp } from "./http";

const from = (headers: Record<string, string>) => forwardedIp((name) => headers[name]);

describe("the middleware's default client address", () => {
  it("is X-Real-IP when present: a changing X-Forwarded-For beside a constant one is one client", () => {
    expect(new Set(["1.1.1.1", "2.2.2.2, 3.3.3.3"].map((xff) => from({ "x-real-ip": "198.51.100.7", "x-forwarded-for": xff })))).toEqual(new Set(["198.51.100.7"]));
  });

  it("else the last X-Forwarded-For entry (the proxy's), never the client's own words to its left", () => {
    expect(from({ "x-forwarded-for": "6.6.6.6, 203.0.113.7" })).toBe("203.0.113.7");
    expect(from({ "x-forwarded-for": "7.7.7.7,203.0.113.7" })).toBe("203.0.113.7");
    expect(from({ "x-forwarded-for": "203.0.113.7" })).toBe("203.0.113.7");
    expect(from({})).toBeNull();
    expect(from({ "x-forwarded-for": " " })).toBeNull();
  });
});
