import { describe, expect, it } from "vitest";
import { compareCohort, newestDrainedMinute } from "./rollout-guard";

const row = (tenant: string, total: number, denied: number, operation = "read") => ({ tenant, operation, total, denied });

describe("compareCohort", () => {
  it("breaches when the cohort's denied share is more than the allowed points above the control's, naming the tenants over it", () => {
    const r = compareCohort([row("a", 50, 20), row("b", 50, 2), row("c", 100, 2), row("d", 100, 4)], new Set(["a", "b"]), 5, 10);
    expect(r.cohort).toEqual({ decisions: 100, denied: 22, share: 0.22 });
    expect(r.control).toEqual({ decisions: 200, denied: 6, share: 0.03 });
    expect(r.marginPoints).toBeCloseTo(19);
    expect(r.verdict).toBe("breached");
    expect(r.tripped).toEqual(["a"]);
  });

  it("holds at exactly the allowed margin, and compares on the cohort's operations only", () => {
    // The control's export denials are not what the cohort did: left out.
    const r = compareCohort([row("a", 100, 6), row("c", 100, 1), row("c", 100, 100, "export")], new Set(["a"]), 5, 10);
    expect(r.control).toEqual({ decisions: 100, denied: 1, share: 0.01 });
    expect(r.marginPoints).toBeCloseTo(5);
    expect(r.verdict).toBe("holds");
  });

  it("does not judge a cohort with too few decisions, nor one without a control (100%)", () => {
    expect(compareCohort([row("a", 9, 9), row("c", 100, 0)], new Set(["a"]), 5, 10).verdict).toBe("too_few_decisions");
    expect(compareCohort([row("a", 100, 50), row("c", 100, 50)], new Set(["a", "c"]), 5, 10).verdict).toBe("no_control");
  });
});

describe("newestDrainedMinute", () => {
  it("is the minute the rollup has closed: it ended at least the drain grace ago", () => {
    const m = Date.UTC(2026, 11, 7, 10, 0);
    expect(newestDrainedMinute(m + 60_000 + 4_999)).toBe(m - 60_000);
    expect(newestDrainedMinute(m + 60_000 + 5_000)).toBe(m);
  });
});
