import { describe, expect, it } from "vitest";
import { projectQuota } from "@/lib/policy/quota-projection";
import { usageQuerySchema } from "./usage-query";

const NOV = Date.UTC(2026, 10, 1);
const DEC = Date.UTC(2026, 11, 1);
const DAY = 86_400_000;

describe("quota projection", () => {
  it("extrapolates linearly to period end and dates the run-out", () => {
    expect(projectQuota(200, 500, NOV, DEC, NOV + 10 * DAY)).toEqual({ projected: 600, runsOutAt: NOV + 25 * DAY });
    expect(projectQuota(60, 300, NOV, DEC, NOV + 10 * DAY)).toEqual({ projected: 180, runsOutAt: null });
  });
  it("dates a quota already spent in the past, and projects nothing before the period starts", () => {
    expect(projectQuota(500, 500, NOV, DEC, NOV + 10 * DAY).runsOutAt).toBe(NOV + 10 * DAY);
    expect(projectQuota(0, 500, NOV, DEC, NOV - DAY)).toEqual({ projected: 0, runsOutAt: null });
    expect(projectQuota(100, 500, NOV, DEC, DEC + 5 * DAY)).toEqual({ projected: 100, runsOutAt: null });
  });
});

describe("usage query schema", () => {
  it("names the field of every invalid parameter", () => {
    const bad = (q: Record<string, string>) => usageQuerySchema.safeParse(q).error?.issues[0]?.path.join(".");
    const ok = { from: "2026-11-01T00:00:00Z", to: "2026-11-02T00:00:00Z", granularity: "hour" };
    expect(usageQuerySchema.safeParse(ok).success).toBe(true);
    expect(bad({ ...ok, from: "nope" })).toBe("from");
    expect(bad({ ...ok, to: "2026-10-01T00:00:00Z" })).toBe("to");
    expect(bad({ ...ok, granularity: "week" })).toBe("granularity");
    expect(bad({ ...ok, tenant: "a b" })).toBe("tenant");
    expect(bad({ ...ok, extra: "1" })).toBe("");
  });
});
