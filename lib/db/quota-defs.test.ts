import { describe, expect, it } from "vitest";
import { countsOnUtcCalendar, type PolicyQuotaDoc } from "./quota-defs";

const doc = (billing?: { anchor: string; timeZone: string }, billingChange?: { atMs: number; previous: null }): PolicyQuotaDoc => ({
  tiers: {},
  tenants: { acme: { slug: "acme", name: "Acme", tier: "free", overrides: [], billing, billingChange } },
});

describe("which tenants' quota counters the UTC-month jobs (reconcile) describe", () => {
  const at = Date.UTC(2026, 2, 20, 12);
  it("a tenant without billing, or anchored on the 1st in UTC, counts on the UTC calendar", () => {
    expect(countsOnUtcCalendar(doc(), "acme", "month", at)).toBe(true);
    expect(countsOnUtcCalendar(doc({ anchor: "2026-01-01", timeZone: "UTC" }), "acme", "month", at)).toBe(true);
    expect(countsOnUtcCalendar(doc({ anchor: "2026-01-15", timeZone: "UTC" }), "acme", "day", at)).toBe(true);
    expect(countsOnUtcCalendar(undefined, "acme", "month", at)).toBe(true);
  });
  it("a tenant anchored on another day or in another zone, or in the first period after a billing change, does not", () => {
    expect(countsOnUtcCalendar(doc({ anchor: "2026-01-15", timeZone: "UTC" }), "acme", "month", at)).toBe(false);
    expect(countsOnUtcCalendar(doc({ anchor: "2026-01-01", timeZone: "America/Los_Angeles" }), "acme", "day", at)).toBe(false);
    expect(countsOnUtcCalendar(doc({ anchor: "2026-01-01", timeZone: "UTC" }, { atMs: Date.UTC(2026, 2, 10), previous: null }), "acme", "month", at)).toBe(true);
    expect(countsOnUtcCalendar(doc({ anchor: "2026-01-01", timeZone: "Europe/Paris" }, { atMs: Date.UTC(2026, 2, 10), previous: null }), "acme", "month", at)).toBe(false);
  });
});
