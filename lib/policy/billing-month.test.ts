import { describe, expect, it } from "vitest";
import { billingMonthOf, isCalendarMonth, periodsEndingInMonth, type TenantBillingState } from "./billing-month";
import type { CompiledBilling } from "./billing-period";

const LA = "America/Los_Angeles";
const always = (billing: CompiledBilling | null): ((atMs: number) => TenantBillingState) => () => ({ billing, change: null });
const brief = (periods: ReturnType<typeof periodsEndingInMonth>) => periods.map((p) => [p.label, p.startDate, p.endDate, new Date(p.startMs).toISOString(), new Date(p.endMs).toISOString()]);

describe("a month's export holds each tenant period whose last local day is in the month", () => {
  it("a tenant anchored on the 15th in Los Angeles: November holds Oct 15 – Nov 14, across the DST change of Nov 1", () => {
    const periods = periodsEndingInMonth("2026-11", always({ anchor: "2026-03-15", timeZone: LA }));
    // Starts at 00:00 PDT (07:00Z), ends at 00:00 PST (08:00Z): a 745-hour period.
    expect(brief(periods)).toEqual([["2026-10-15@America/Los_Angeles", "2026-10-15", "2026-11-14", "2026-10-15T07:00:00.000Z", "2026-11-15T08:00:00.000Z"]]);
    expect(periods[0]!.endMs - periods[0]!.startMs).toBe((31 * 24 + 1) * 3_600_000);
  });

  it("the March DST month: Feb 15 – Mar 14 is one hour short, and is March's", () => {
    const periods = periodsEndingInMonth("2026-03", always({ anchor: "2026-03-15", timeZone: LA }));
    expect(brief(periods)).toEqual([["2026-02-15@America/Los_Angeles", "2026-02-15", "2026-03-14", "2026-02-15T08:00:00.000Z", "2026-03-15T07:00:00.000Z"]]);
    expect(periods[0]!.endMs - periods[0]!.startMs).toBe((28 * 24 - 1) * 3_600_000);
  });

  it("an anchor on the 31st: February's period ends on Feb 27 (the next starts on the 28th), and every month has exactly one", () => {
    const b = always({ anchor: "2026-01-31", timeZone: LA });
    expect(brief(periodsEndingInMonth("2027-02", b))).toEqual([["2027-01-31@America/Los_Angeles", "2027-01-31", "2027-02-27", "2027-01-31T08:00:00.000Z", "2027-02-28T08:00:00.000Z"]]);
    expect(brief(periodsEndingInMonth("2027-03", b))).toEqual([["2027-02-28@America/Los_Angeles", "2027-02-28", "2027-03-30", "2027-02-28T08:00:00.000Z", "2027-03-31T07:00:00.000Z"]]);
    expect(periodsEndingInMonth("2028-03", b).map((p) => p.label)).toEqual(["2028-02-29@America/Los_Angeles"]);
    for (let m = 1; m <= 12; m++) expect(periodsEndingInMonth(`2027-${String(m).padStart(2, "0")}`, b), `2027-${m}`).toHaveLength(1);
  });

  it("anchored on the 1st in Los Angeles: November is the local calendar month, ending at 08:00 UTC on Dec 1", () => {
    const periods = periodsEndingInMonth("2026-11", always({ anchor: "2026-01-01", timeZone: LA }));
    expect(brief(periods)).toEqual([["2026-11-01@America/Los_Angeles", "2026-11-01", "2026-11-30", "2026-11-01T07:00:00.000Z", "2026-12-01T08:00:00.000Z"]]);
    expect(billingMonthOf(periods[0]!)).toBe("2026-11");
    // East of UTC the local month ends before the UTC one.
    expect(brief(periodsEndingInMonth("2026-11", always({ anchor: "2026-01-01", timeZone: "Asia/Tokyo" })))[0]!.slice(3)).toEqual(["2026-10-31T15:00:00.000Z", "2026-11-30T15:00:00.000Z"]);
  });

  it("no billing, or anchor day 1 in UTC, is the UTC calendar month: exported as before", () => {
    expect(isCalendarMonth(periodsEndingInMonth("2026-11", always(null)), "2026-11")).toBe(true);
    expect(isCalendarMonth(periodsEndingInMonth("2026-02", always({ anchor: "2025-06-01", timeZone: "UTC" })), "2026-02")).toBe(true);
    expect(isCalendarMonth(periodsEndingInMonth("2026-11", always({ anchor: "2026-01-15", timeZone: "UTC" })), "2026-11")).toBe(false);
  });

  it("a billing change mid-period ends one period at the change and starts another: both ending in the month are its lines", () => {
    const change = Date.UTC(2026, 10, 20, 13, 45, 10);
    const anchored = { anchor: "2026-03-25", timeZone: LA };
    // Before the change's publish the history knows the UTC calendar only; from it, the anchored billing stamped with the change.
    const billingAt = (atMs: number): TenantBillingState => (atMs < change ? { billing: null, change: null } : { billing: anchored, change: { atMs: change, previous: null } });
    expect(brief(periodsEndingInMonth("2026-11", billingAt))).toEqual([
      ["2026-11", "2026-11-01", "2026-11-20", "2026-11-01T00:00:00.000Z", "2026-11-20T13:45:10.000Z"],
      ["2026-11-20T054510@America/Los_Angeles", "2026-11-20", "2026-11-24", "2026-11-20T13:45:10.000Z", "2026-11-25T08:00:00.000Z"],
    ]);
    expect(brief(periodsEndingInMonth("2026-12", billingAt)).map((p) => p[0])).toEqual(["2026-11-25@America/Los_Angeles"]);
    expect(periodsEndingInMonth("2026-10", billingAt).map((p) => p.label)).toEqual(["2026-10"]);
  });

  it("a tenant that did not exist yet has no period before it appears", () => {
    const created = Date.UTC(2026, 10, 3);
    const billingAt = (atMs: number): TenantBillingState | null => (atMs < created ? null : { billing: { anchor: "2026-11-03", timeZone: LA }, change: null });
    expect(periodsEndingInMonth("2026-11", billingAt).map((p) => p.label)).toEqual(["2026-10-03@America/Los_Angeles"]);
    expect(periodsEndingInMonth("2026-12", billingAt).map((p) => p.label)).toEqual(["2026-11-03@America/Los_Angeles"]);
  });
});
