import { describe, expect, it } from "vitest";
import { describeLimit, describeQuota, perWindow } from "./limit-sentence";

describe("plain sentences for the limit matrix", () => {
  it("says the N+1-th request of a sliding window gets 429 for up to the window", () => {
    expect(describeLimit({ operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 100, window: "1m" })).toBe(
      "100 requests per minute per API key; the 101st gets 429 for up to 60 s.",
    );
  });
  it("describes concurrency by the request in flight that is refused", () => {
    expect(describeLimit({ operation: "*", scope: "tenant", algorithm: "concurrency", limit: 10, leaseTtl: "30s" })).toContain(
      "At most 10 requests in flight per tenant",
    );
  });
  it("describes a delay-mode leaky bucket with its maximum wait", () => {
    const text = describeLimit({ operation: "orders-read", scope: "ip", algorithm: "leaky_bucket", limit: 20, window: "1s", burst: 40, mode: "delay", maxDelay: "500ms" });
    expect(text).toContain("up to 500 ms");
    expect(text).toContain("per client IP");
  });
  it("asks for a window rather than describing nonsense", () => {
    expect(describeLimit({ operation: "*", scope: "ip", algorithm: "fixed_window", limit: 5, window: "soon" })).toBe("Enter a window like 1m.");
  });
  it("formats windows in words", () => {
    expect(perWindow(3_600_000)).toBe("per hour");
    expect(perWindow(30_000)).toBe("per 30 seconds");
    expect(perWindow(500)).toBe("per 500 ms");
  });
  it("distinguishes blocking and billed quotas", () => {
    expect(describeQuota({ operation: "*", period: "month", limit: 10000, overage: "block" })).toContain("get 429");
    expect(describeQuota({ operation: "*", period: "month", limit: 10000, overage: "bill" })).toContain("billed as overage");
  });
});
