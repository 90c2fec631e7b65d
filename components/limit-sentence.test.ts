import { describe, expect, it } from "vitest";
import { limitLabel } from "@/lib/policy/labels";
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
  it("never words a limit that is not a whole number from 1 to 1,000,000,000 (defect #29.9)", () => {
    const base = { operation: "*", scope: "api_key", algorithm: "sliding_window_counter", window: "1m" };
    for (const limit of [-5, 0, 4.5, 1_000_000_000_000_000, Number.NaN]) {
      const text = describeLimit({ ...base, limit });
      expect(text).toBe("Enter a whole number of requests from 1 to 1,000,000,000.");
    }
    expect(describeLimit({ ...base, algorithm: "concurrency", window: undefined, limit: -5 })).toBe("Enter a whole number of requests from 1 to 1,000,000,000.");
    expect(describeLimit({ ...base, limit: 1_000_000_000 })).toContain("the 1,000,000,001st gets 429");
    expect(describeLimit({ ...base, algorithm: "token_bucket", limit: 10, burst: -3 })).toBe("Enter a burst: a whole number from 1 to 1,000,000,000.");
  });
  it("asks for a window when the window is 0, never calling a windowed limit 'in flight' (defect #29.9)", () => {
    expect(describeLimit({ operation: "*", scope: "ip", algorithm: "fixed_window", limit: 300, window: "0s" })).toBe("Enter a window like 1m.");
    expect(limitLabel({ scope: "ip", algorithm: "fixed_window", limit: 300, windowMs: 0 })).toBe("client IP · fixed window · 300 per (no window yet)");
    expect(limitLabel({ scope: "ip", algorithm: "concurrency", limit: 300, windowMs: null })).toBe("client IP · concurrency · 300 in flight");
  });
});
