import { describe, expect, it } from "vitest";
import { newestDrainedMinute } from "./rollout-guard";

describe("newestDrainedMinute", () => {
  it("is the minute the rollup has closed: it ended at least the drain grace ago", () => {
    const m = Date.UTC(2026, 11, 7, 10, 0);
    expect(newestDrainedMinute(m + 60_000 + 4_999)).toBe(m - 60_000);
    expect(newestDrainedMinute(m + 60_000 + 5_000)).toBe(m);
  });
});
