import { describe, expect, it } from "vitest";
import { DecisionMetrics } from "./metrics";

describe("decision metrics", () => {
  it("count denials by the decision API's reason beside the decisions by outcome, whose series stay as they were", async () => {
    const m = new DecisionMetrics({ defaultMetrics: false });
    for (let i = 0; i < 3; i++) m.recordDecision("denied", "free", "orders-read", 0.0002, "rate_limited");
    m.recordDecision("denied", "_", "*", 0.0001, "unknown_key");
    m.recordDecision("unavailable", "free", "orders-read", 0.0001, "store_unavailable");
    m.recordDecision("allowed", "free", "orders-read", 0.0002, "ok");
    m.recordDecision("allowed", "free", "orders-read", 0.0002);
    const text = await m.registry.metrics();
    expect(text).toMatch(/^sluice_denials_total\{reason="rate_limited",tier="free",operation="orders-read"\} 3$/m);
    expect(text).toMatch(/^sluice_denials_total\{reason="unknown_key",tier="_",operation="\*"\} 1$/m);
    expect(text).toMatch(/^sluice_denials_total\{reason="store_unavailable",tier="free",operation="orders-read"\} 1$/m);
    expect(text).not.toMatch(/sluice_denials_total\{reason="[a-z_]+",tier="free",operation="orders-read"\} 2/);
    expect(text).toMatch(/^sluice_decisions_total\{outcome="denied",tier="free",operation="orders-read"\} 3$/m);
    expect(text).toMatch(/^sluice_decisions_total\{outcome="allowed",tier="free",operation="orders-read"\} 2$/m);
    // A second scrape adds nothing new.
    m.recordDecision("denied", "free", "orders-read", 0.0002, "rate_limited");
    expect(await m.registry.metrics()).toMatch(/^sluice_denials_total\{reason="rate_limited",tier="free",operation="orders-read"\} 4$/m);
  });
});
