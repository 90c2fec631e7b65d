import { describe, expect, it } from "vitest";
import { accuracyRemedy, admitted } from "./accuracy-remedy";
import { poisson } from "./poisson";

describe("the remedy a failed accuracy requirement names (#29.8)", () => {
  // The case: a sliding window counter of 7 per 20 s, held to 5%, at 1.6× the limit.
  const windowMs = 20_000;
  const start = 1_796_000_000_000 + 7_300; // not aligned to a window edge
  const arrivalsMs = poisson((1.6 * 7) / windowMs, 10 * windowMs, 42).map((t) => start + Math.round(t));
  const run = { limit: 7, windowMs, cost: 1, arrivalsMs, countFromMs: start + windowMs };

  it("measures the smallest precision that comes within the tolerance on the same arrivals, or names the exact log", () => {
    const exact = admitted(run, "log");
    const remedy = accuracyRemedy({ ...run, precision: 1, tolerance: 0.05 });
    expect(remedy.asIs).toBeCloseTo(Math.abs(admitted(run, "counter", 1) - exact) / exact, 10);
    if (remedy.change.startsWith("precision: ")) {
      const k = Number(remedy.change.slice("precision: ".length));
      expect(remedy.deviation).toBeLessThanOrEqual(0.05);
      expect(Math.abs(admitted(run, "counter", k) - exact) / exact).toBe(remedy.deviation);
      expect(remedy.text).toMatch(/^precision: \d+ \(\d+\.\d% on the same arrivals; as is \d+\.\d%\)$/);
    } else {
      expect(remedy.change).toBe("algorithm: sliding_window_log");
    }
  });

  it("a tolerance nothing but the exact log meets names the algorithm", () => {
    const remedy = accuracyRemedy({ ...run, precision: 1, tolerance: -1 });
    expect(remedy.change).toBe("algorithm: sliding_window_log");
    expect(remedy.text).toContain("exact; no precision up to 60");
  });

  it("the exact log admits exactly what it should: never more than the limit in any window", () => {
    expect(admitted(run, "log")).toBeGreaterThan(0);
    expect(admitted({ ...run, countFromMs: 0 }, "log")).toBeLessThanOrEqual(7 * Math.ceil((arrivalsMs.at(-1)! - start) / windowMs + 1));
  });
});
