import { describe, expect, it } from "vitest";
import { granularityForSpan, parseCustomRange } from "./usage-dashboard";

const NOW = Date.UTC(2026, 11, 6, 12, 0);

describe("the dashboards' custom range", () => {
  it("reads datetime-local values as UTC, clips `to` at now, and picks buckets by the span", () => {
    expect(parseCustomRange("2026-12-05T09:30", "2026-12-05T10:30", NOW)).toEqual({ ok: true, fromMs: Date.UTC(2026, 11, 5, 9, 30), toMs: Date.UTC(2026, 11, 5, 10, 30) });
    expect(parseCustomRange("2026-12-06T11:00Z", "2026-12-07T00:00Z", NOW)).toMatchObject({ ok: true, toMs: NOW });
    expect([granularityForSpan(6 * 3_600_000), granularityForSpan(14 * 86_400_000), granularityForSpan(15 * 86_400_000)]).toEqual(["minute", "hour", "day"]);
  });

  it("refuses a bad range with the field named, never another range silently", () => {
    expect(parseCustomRange("yesterday", "2026-12-05T10:30", NOW)).toMatchObject({ ok: false, message: "from: expected a UTC time like 2026-12-05T09:30" });
    expect(parseCustomRange("2026-12-05T10:30", "2026-12-05T09:30", NOW)).toMatchObject({ ok: false, message: "to: must be after from" });
    expect(parseCustomRange("2026-01-01T00:00", "2026-12-05T00:00", NOW)).toMatchObject({ ok: false, message: "to: a custom range is at most 90 days" });
    expect(parseCustomRange("2026-12-07T00:00", "2026-12-08T00:00", NOW)).toMatchObject({ ok: false, message: "from: must be in the past" });
  });
});
