import { describe, expect, it } from "vitest";
import { limitLabel, quotaLabel, windowLabel } from "./labels";

describe("limit and quota labels (one vocabulary on every screen)", () => {
  it("names a limit by scope, algorithm and amount", () => {
    expect(limitLabel({ scope: "api_key", algorithm: "sliding_window_counter", limit: 100, windowMs: 60_000 })).toBe("API key · sliding window counter · 100 per 1 min");
    expect(limitLabel({ scope: "tenant", algorithm: "concurrency", limit: 10, windowMs: 0 })).toBe("tenant · concurrency · 10 in flight");
    expect(limitLabel({ scope: "ip", algorithm: "leaky_bucket", limit: 20, windowMs: 1_000, mode: "delay" })).toBe("client IP · leaky bucket · 20 per 1 s · delay");
  });
  it("names a quota by operation, allowance and period", () => {
    expect(quotaLabel({ operation: "*", period: "month", limit: 2_000_000, overage: "bill" })).toBe("all operations · 2,000,000 units per month · overage billed");
    expect(quotaLabel({ operation: "export", period: "day", limit: 500, overage: "block" })).toBe("export · 500 units per UTC day · blocked when used up");
  });
  it("writes windows in the largest whole unit", () => {
    expect([windowLabel(3_600_000), windowLabel(86_400_000), windowLabel(1_500), windowLabel(500)]).toEqual(["1 h", "1 day", "1.5 s", "500 ms"]);
  });
});
