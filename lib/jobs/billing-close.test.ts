import { describe, expect, it } from "vitest";
import { monthsToClose } from "./billing-close";

describe("monthsToClose", () => {
  it("fills the months without any usage between the first known month and now, across a year end", () => {
    expect(monthsToClose(["2026-11", "2026-10"], Date.UTC(2027, 1, 10))).toEqual(["2026-10", "2026-11", "2026-12", "2027-01"]);
  });

  it("leaves months before the first known one alone, and keeps known months of the current one", () => {
    expect(monthsToClose(["2026-12"], Date.UTC(2026, 11, 5))).toEqual(["2026-12"]);
    expect(monthsToClose([], Date.UTC(2026, 11, 5))).toEqual([]);
  });
});
