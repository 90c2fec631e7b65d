import { describe, expect, it } from "vitest";
import { conformanceSuite, limitCheck, manualClock } from "./testing/conformance";
import { createMemoryStore } from "./memory";

conformanceSuite("memory", () => ({ makeStore: (clock) => createMemoryStore({ clock }), prefix: "m:" }));

describe("memory store", () => {
  it("forgets every counter once its windows have passed", async () => {
    const clock = manualClock();
    const store = createMemoryStore({ clock });
    for (const algorithm of ["fixed_window", "sliding_window_counter", "sliding_window_log", "token_bucket", "concurrency"] as const) {
      await store.check([limitCheck("m:", { algorithm, limit: 3, windowMs: 1_000, leaseTtlMs: 2_000 })], { cost: 1, dryRun: false });
    }
    expect(store.size()).toBe(5);
    clock.advance(2_001);
    expect(store.size()).toBe(0);
  });
});
