import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decompose, GRANULARITY_MS } from "./usage-repo";

describe("decompose", () => {
  it("splits a range into whole days, whole hours and minutes that tile it exactly", () => {
    const from = Date.UTC(2026, 10, 5, 10, 1);
    const to = Date.UTC(2026, 10, 8, 9, 1);
    const spans = decompose(from, to);
    expect(spans).toEqual([
      { granularity: "day", fromMs: Date.UTC(2026, 10, 6), toMs: Date.UTC(2026, 10, 8) },
      { granularity: "hour", fromMs: Date.UTC(2026, 10, 5, 11), toMs: Date.UTC(2026, 10, 6) },
      { granularity: "minute", fromMs: from, toMs: Date.UTC(2026, 10, 5, 11) },
      { granularity: "hour", fromMs: Date.UTC(2026, 10, 8), toMs: Date.UTC(2026, 10, 8, 9) },
      { granularity: "minute", fromMs: Date.UTC(2026, 10, 8, 9), toMs: to },
    ]);
  });

  it("covers every minute of any range exactly once, each span aligned to its granularity", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 60 * 24 * 40 }), fc.integer({ min: 0, max: 60 * 24 * 40 }), (a, b) => {
        const base = Date.UTC(2026, 0, 1);
        const from = base + Math.min(a, b) * 60_000;
        const to = base + Math.max(a, b) * 60_000;
        const spans = decompose(from, to);
        let covered = 0;
        for (const s of spans) {
          const size = GRANULARITY_MS[s.granularity];
          expect(s.fromMs % size).toBe(0);
          expect(s.toMs % size).toBe(0);
          expect(s.fromMs).toBeGreaterThanOrEqual(from);
          expect(s.toMs).toBeLessThanOrEqual(to);
          covered += s.toMs - s.fromMs;
        }
        const sorted = [...spans].sort((x, y) => x.fromMs - y.fromMs);
        for (let i = 1; i < sorted.length; i++) expect(sorted[i]!.fromMs).toBeGreaterThanOrEqual(sorted[i - 1]!.toMs);
        expect(covered).toBe(to - from);
      }),
    );
  });
});
