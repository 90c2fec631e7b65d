import { describe, expect, it } from "vitest";
import type { PolicyAt } from "../../db/quota-defs";
import { versionsInForce } from "./billing-statement";

const NOV = Date.UTC(2026, 10, 1);
const DEC = Date.UTC(2026, 11, 1);
const DAY = 86_400_000;
const v = (version: number, createdAtMs: number): PolicyAt => ({ version, createdAtMs, doc: { tiers: {}, tenants: {} } });

describe("versionsInForce", () => {
  // Newest first, as PolicyHistory.load() returns them.
  const all = [v(5, DEC + DAY), v(4, NOV + 20 * DAY), v(3, NOV + 20 * DAY), v(2, NOV + 3 * DAY), v(1, NOV - 10 * DAY), v(0, NOV - 20 * DAY)];

  it("is the version live at the month's start and every one published before its end, each with the end of its reign", () => {
    expect(versionsInForce(all, NOV, DEC).map((x) => [x.version.version, x.untilMs])).toEqual([
      [4, DEC],
      // v3 was replaced at the instant it was published: never in force.
      [2, NOV + 20 * DAY],
      [1, NOV + 3 * DAY],
    ]);
  });

  it("has nothing published after the month (a tenant created later gets no line) nor before the live one", () => {
    // October: v0 from the 12th, v1 from the 22nd; nothing before the 12th (no line for anyone then).
    expect(versionsInForce(all, Date.UTC(2026, 9, 1), NOV).map((x) => [x.version.version, x.untilMs])).toEqual([[1, NOV], [0, NOV - 10 * DAY]]);
    expect(versionsInForce(all, Date.UTC(2026, 8, 1), Date.UTC(2026, 9, 1))).toEqual([]);
    expect(versionsInForce(all, DEC, Date.UTC(2027, 0, 1)).map((x) => x.version.version)).toEqual([5, 4]);
  });
});
