import { describe, expect, it } from "vitest";
import { DenialLog } from "./denial-log";

describe("denial log: one line per reason per interval, not per request", () => {
  it("counts denials by reason, keeps the first as the example, and starts over after a drain", () => {
    const log = new DenialLog();
    for (let i = 0; i < 1_000; i++) log.record({ reason: "rate_limited", tenant: `t${i}`, tier: "free", operation: "orders-read" });
    for (let i = 0; i < 3; i++) log.record({ reason: "unknown_key", tenant: null, tier: null, operation: "*" });
    log.record({ reason: "store_unavailable", tenant: "acme", tier: "pro", operation: "export" });
    expect(log.drain()).toEqual([
      { reason: "rate_limited", count: 1_000, example: { tenant: "t0", tier: "free", operation: "orders-read" } },
      { reason: "unknown_key", count: 3, example: { tenant: null, tier: null, operation: "*" } },
      { reason: "store_unavailable", count: 1, example: { tenant: "acme", tier: "pro", operation: "export" } },
    ]);
    expect(log.drain()).toEqual([]);
    log.record({ reason: "rate_limited", tenant: "t9", tier: "free", operation: "orders-read" });
    expect(log.drain()).toEqual([{ reason: "rate_limited", count: 1, example: { tenant: "t9", tier: "free", operation: "orders-read" } }]);
  });
});
