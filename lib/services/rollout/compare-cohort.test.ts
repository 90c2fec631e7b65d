import { describe, expect, it } from "vitest";
import { compareCohort } from "./compare-cohort";

/** A minute row whose denials are all 429s unless `denied429` says fewer. */
const row = (tenant: string, total: number, denied: number, operation = "read", denied429 = denied) => ({ tenant, operation, total, denied, denied429 });

describe("compareCohort", () => {
  it("breaches when the cohort's denied share is more than the allowed points above the control's, naming the tenants over it", () => {
    const r = compareCohort([row("a", 50, 20), row("b", 50, 2), row("c", 100, 2), row("d", 100, 4)], new Set(["a", "b"]), 5, 10);
    expect(r.cohort).toEqual({ decisions: 100, denied: 22, denied429: 22, share: 0.22 });
    expect(r.control).toEqual({ decisions: 200, denied: 6, denied429: 6, share: 0.03 });
    expect(r.marginPoints).toBeCloseTo(19);
    expect(r.verdict).toBe("breached");
    expect(r.tripped).toEqual(["a"]);
  });

  it("holds at exactly the allowed margin, and compares on the cohort's operations only", () => {
    // The control's export denials are not what the cohort did: left out.
    const r = compareCohort([row("a", 100, 6), row("c", 100, 1), row("c", 100, 100, "export")], new Set(["a"]), 5, 10);
    expect(r.control).toEqual({ decisions: 100, denied: 1, denied429: 1, share: 0.01 });
    expect(r.marginPoints).toBeCloseTo(5);
    expect(r.verdict).toBe("holds");
  });

  it("counts 429s only in the 429 share: a cohort whose denials are unknown keys, suspended tenants or a closed store holds", () => {
    // a: 40 denials of which 2 are 429s (the rest 401/403/503); b: 3 quota-exhausted 429s (a 429, #29).
    const r = compareCohort([row("a", 100, 40, "read", 2), row("b", 100, 3), row("c", 200, 4)], new Set(["a", "b"]), 5, 10);
    expect(r.cohort).toEqual({ decisions: 200, denied: 43, denied429: 5, share: 0.025 });
    expect(r.control).toEqual({ decisions: 200, denied: 4, denied429: 4, share: 0.02 });
    expect(r.verdict).toBe("holds");
    expect(r.tripped).toEqual([]);
    expect(r.perTenant.get("a")).toEqual({ total: 100, denied: 2 });
    // The same minute with the 429s where the 401s were breaches.
    expect(compareCohort([row("a", 100, 40), row("b", 100, 3), row("c", 200, 4)], new Set(["a", "b"]), 5, 10)).toMatchObject({ verdict: "breached", tripped: ["a"] });
  });

  it("does not judge a cohort with too few decisions, nor one without a control (100%)", () => {
    expect(compareCohort([row("a", 9, 9), row("c", 100, 0)], new Set(["a"]), 5, 10).verdict).toBe("too_few_decisions");
    expect(compareCohort([row("a", 100, 50), row("c", 100, 50)], new Set(["a", "c"]), 5, 10).verdict).toBe("no_control");
  });
});
