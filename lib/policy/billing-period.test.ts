import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { billingPeriod, billingWindow, plainBillingPeriod, type CompiledBilling } from "./billing-period";
import { quotaPeriod } from "./quota-period";
import { localDate, startOfLocalDay, wallClock, zoneOffsetMs } from "./zoned-time";

const HOUR = 3_600_000;
const LA = "America/Los_Angeles";
const ZONES = [LA, "Europe/Berlin", "Europe/London", "Europe/Paris", "Europe/Lisbon", "UTC", "Asia/Kolkata", "Australia/Lord_Howe", "America/Santiago"];
const la = (anchor: string): CompiledBilling => ({ anchor, timeZone: LA });

describe("billing periods: the default is today's UTC calendar", () => {
  it("no billing gives exactly quotaPeriod's periods and labels (no counter resets)", () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2100, 0, 1) }), fc.constantFrom("day" as const, "month" as const), (nowMs, period) => {
        expect(billingPeriod(nowMs, period, null)).toEqual(quotaPeriod(nowMs, period));
        expect(billingPeriod(nowMs, period, { anchor: "2024-07-01", timeZone: "UTC" })).toEqual(quotaPeriod(nowMs, period));
      }),
      { numRuns: 2000 },
    );
  });
  it("UTC days keep their label whatever the anchor; other UTC anchors get their own month labels", () => {
    const now = Date.UTC(2026, 2, 20, 12);
    expect(billingPeriod(now, "day", { anchor: "2026-01-15", timeZone: "UTC" })).toEqual(quotaPeriod(now, "day"));
    expect(billingPeriod(now, "month", { anchor: "2026-01-15", timeZone: "UTC" })).toEqual({
      startMs: Date.UTC(2026, 2, 15),
      endMs: Date.UTC(2026, 3, 15),
      label: "2026-03-15@UTC",
    });
  });
});

describe("billing periods: anchored in a time zone", () => {
  it("a tenant anchored on the 15th in Los Angeles resets at 00:00 PT on the 15th, across DST", () => {
    // 2026-03-08 02:00 PST → PDT. The period 2026-02-15..03-15 spans it: starts at 08:00Z, ends at 07:00Z.
    const p = billingPeriod(Date.UTC(2026, 2, 10), "month", la("2026-03-15"));
    expect(p).toEqual({ startMs: Date.UTC(2026, 1, 15, 8), endMs: Date.UTC(2026, 2, 15, 7), label: "2026-02-15@America/Los_Angeles" });
    // One millisecond before local midnight on the 15th: still the old period; at it: the new one.
    expect(billingPeriod(Date.UTC(2026, 2, 15, 7) - 1, "month", la("2026-03-15")).label).toBe("2026-02-15@America/Los_Angeles");
    expect(billingPeriod(Date.UTC(2026, 2, 15, 7), "month", la("2026-03-15")).label).toBe("2026-03-15@America/Los_Angeles");
    // November: PDT → PST on 2026-11-01; the 15th of November starts at 08:00Z.
    expect(billingPeriod(Date.UTC(2026, 10, 20), "month", la("2026-03-15"))).toMatchObject({ startMs: Date.UTC(2026, 10, 15, 8), endMs: Date.UTC(2026, 11, 15, 8) });
  });

  it("the 29th–31st fall on the last day of shorter months, leap years included", () => {
    const b = la("2026-01-31");
    expect(billingPeriod(Date.UTC(2027, 1, 10), "month", b)).toMatchObject({ label: "2027-01-31@America/Los_Angeles", endMs: Date.UTC(2027, 1, 28, 8) });
    expect(billingPeriod(Date.UTC(2027, 2, 1), "month", b)).toMatchObject({ label: "2027-02-28@America/Los_Angeles", endMs: Date.UTC(2027, 2, 31, 7) });
    expect(billingPeriod(Date.UTC(2028, 2, 1), "month", b)).toMatchObject({ label: "2028-02-29@America/Los_Angeles" });
    expect(billingPeriod(Date.UTC(2028, 3, 15), "month", b)).toMatchObject({ label: "2028-03-31@America/Los_Angeles", endMs: Date.UTC(2028, 3, 30, 7) });
    expect(billingPeriod(Date.UTC(2028, 1, 29, 12), "month", { anchor: "2024-02-29", timeZone: "UTC" })).toMatchObject({ label: "2028-02-29@UTC" });
    expect(billingPeriod(Date.UTC(2027, 1, 28, 12), "month", { anchor: "2024-02-29", timeZone: "UTC" })).toMatchObject({ label: "2027-02-28@UTC" });
  });

  it("days run local midnight to local midnight: 23 h and 25 h on change days", () => {
    const spring = billingPeriod(Date.UTC(2026, 2, 29, 12), "day", { anchor: "2026-01-01", timeZone: "Europe/Berlin" });
    expect(spring).toEqual({ startMs: Date.UTC(2026, 2, 28, 23), endMs: Date.UTC(2026, 2, 29, 22), label: "2026-03-29@Europe/Berlin" });
    const fall = billingPeriod(Date.UTC(2026, 9, 25, 12), "day", { anchor: "2026-01-01", timeZone: "Europe/Berlin" });
    expect(fall.endMs - fall.startMs).toBe(25 * HOUR);
  });

  it("a midnight the clock skips starts the day when the clock jumps (Santiago)", () => {
    // Chile moves from -04 to -03 at 24:00 on 2026-09-05: 2026-09-06 00:00 does not exist; the day starts at 04:00Z (01:00 local).
    const start = startOfLocalDay(2026, 9, 6, "America/Santiago");
    expect(wallClock(start, "America/Santiago").slice(2, 4)).toEqual([6, 1]);
    expect(zoneOffsetMs(start - 1, "America/Santiago")).not.toBe(zoneOffsetMs(start, "America/Santiago"));
  });

  it("properties: every instant lies in its period, periods tile time, starts are local midnights of the anchor day", () => {
    const arb = fc.record({
      nowMs: fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2060, 0, 1) }),
      zone: fc.constantFrom(...ZONES),
      day: fc.oneof(fc.constantFrom(1, 15, 28, 29, 30, 31), fc.integer({ min: 1, max: 31 })),
    });
    fc.assert(
      fc.property(arb, ({ nowMs, zone, day }) => {
        const billing = { anchor: `2024-01-${String(day).padStart(2, "0")}`, timeZone: zone };
        const p = plainBillingPeriod(nowMs, "month", billing);
        expect(p.startMs).toBeLessThanOrEqual(nowMs);
        expect(nowMs).toBeLessThan(p.endMs);
        // Consecutive: the next period starts where this one ends, the previous ends where it starts.
        expect(plainBillingPeriod(p.endMs, "month", billing).startMs).toBe(p.endMs);
        expect(plainBillingPeriod(p.startMs - 1, "month", billing).endMs).toBe(p.startMs);
        const [y, m, d] = localDate(p.startMs, zone);
        const last = new Date(Date.UTC(y, m, 0)).getUTCDate();
        expect(d).toBe(Math.min(day, last));
        // Local midnight (or the first instant of the day when midnight was skipped).
        expect(localDate(p.startMs - 1, zone)).not.toEqual([y, m, d]);
        expect(p.label).toBe(zone === "UTC" && day === 1 ? `${y}-${String(m).padStart(2, "0")}` : `${y}-${String(m).padStart(2, "0")}-${String(d).padStart(2, "0")}@${zone}`);
        // 28–31 days long, give or take a daylight-saving hour (Lord Howe: half an hour).
        const days = (p.endMs - p.startMs) / 86_400_000;
        expect(days).toBeGreaterThanOrEqual(28 - 1 / 24);
        expect(days).toBeLessThanOrEqual(31 + 1 / 24);
      }),
      { numRuns: 3000 },
    );
  });

  it("properties: days tile time across DST in Los Angeles and Europe", () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2060, 0, 1) }), fc.constantFrom(...ZONES), (nowMs, zone) => {
        const p = plainBillingPeriod(nowMs, "day", { anchor: "2024-01-01", timeZone: zone });
        expect(p.startMs).toBeLessThanOrEqual(nowMs);
        expect(nowMs).toBeLessThan(p.endMs);
        expect(plainBillingPeriod(p.endMs, "day", { anchor: "2024-01-01", timeZone: zone }).startMs).toBe(p.endMs);
        expect(localDate(p.startMs, zone)).toEqual(localDate(nowMs, zone));
        expect([23, 23.5, 24, 24.5, 25]).toContain((p.endMs - p.startMs) / HOUR);
      }),
      { numRuns: 3000 },
    );
  });

  it("every DST change of 2020–2040 in Los Angeles and Europe leaves the 15th's period boundary at local midnight", () => {
    for (const zone of [LA, "Europe/Berlin", "Europe/London"]) {
      for (let y = 2020; y <= 2040; y++) {
        for (let m = 1; m <= 12; m++) {
          const start = startOfLocalDay(y, m, 15, zone);
          expect(wallClock(start, zone)).toEqual([y, m, 15, 0, 0, 0]);
          expect(billingPeriod(start, "month", { anchor: "2026-03-15", timeZone: zone }).startMs).toBe(start);
        }
      }
    }
  });
});

describe("billing changes start the new period at the change", () => {
  const change = { atMs: Date.UTC(2026, 4, 20, 20, 45, 10), previous: null };
  const after: CompiledBilling = la("2026-05-01");

  it("before the change: the previous billing, its period cut at the change; after: a period from the change to the new billing's boundary", () => {
    expect(billingPeriod(change.atMs - 1, "month", after, change)).toEqual({ startMs: Date.UTC(2026, 4, 1), endMs: change.atMs, label: "2026-05" });
    expect(billingPeriod(change.atMs, "month", after, change)).toEqual({
      startMs: change.atMs,
      endMs: Date.UTC(2026, 5, 1, 7),
      label: "2026-05-20T134510@America/Los_Angeles",
    });
    expect(billingPeriod(Date.UTC(2026, 5, 1, 7), "month", after, change).label).toBe("2026-06-01@America/Los_Angeles");
    // Day quotas change zone too: the change day's rest is its own period.
    expect(billingPeriod(change.atMs + 1, "day", after, change)).toMatchObject({ startMs: change.atMs, endMs: Date.UTC(2026, 4, 21, 7) });
  });

  it("an anchor change in the same zone leaves day periods alone", () => {
    const c = { atMs: Date.UTC(2026, 4, 20, 20), previous: la("2026-01-15") };
    expect(billingPeriod(c.atMs + 1, "day", la("2026-01-01"), c)).toEqual(plainBillingPeriod(c.atMs + 1, "day", la("2026-01-01")));
    expect(billingPeriod(c.atMs + 1, "month", la("2026-01-01"), c).startMs).toBe(c.atMs);
  });

  it("billingWindow hands the store this period and the next, back to back", () => {
    const w = billingWindow(change.atMs - 1000, "month", after, change);
    expect(w.current.endMs).toBe(change.atMs);
    expect(w.next).toMatchObject({ startMs: change.atMs, label: "2026-05-20T134510@America/Los_Angeles" });
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2027, 0, 1) }), (nowMs) => {
        const { current, next } = billingWindow(nowMs, "month", after, change);
        expect(next.startMs).toBe(current.endMs);
        expect(next.label).not.toBe(current.label);
        expect(current.startMs <= nowMs && nowMs < current.endMs).toBe(true);
      }),
    );
  });

  it("labels never repeat across a change: no counter is met twice", () => {
    const seen = new Map<string, number>();
    for (let t = Date.UTC(2026, 0, 1); t < Date.UTC(2027, 0, 1); t += 7 * HOUR) {
      for (const period of ["day", "month"] as const) {
        const p = billingPeriod(t, period, after, change);
        const key = `${period}|${p.label}`;
        const known = seen.get(key);
        if (known !== undefined) expect(known).toBe(p.startMs);
        seen.set(key, p.startMs);
      }
    }
  });
});
