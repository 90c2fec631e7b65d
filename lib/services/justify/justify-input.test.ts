import { describe, expect, it } from "vitest";
import { advisorInputSchema, capacityInputSchema, fieldErrors, replayInputSchema } from "./justify-input";

const errorsOf = (r: { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } }) => (r.success ? [] : fieldErrors(r.error!).map((e) => `${e.field}: ${e.message}`));

describe("the Justify tools' inputs", () => {
  it("replay days default to 7 and must be a whole number from 1 to 30, the error naming days", () => {
    expect(replayInputSchema.parse({})).toEqual({ days: 7 });
    expect(replayInputSchema.parse({ days: "" })).toEqual({ days: 7 });
    expect(replayInputSchema.parse({ days: "30" })).toEqual({ days: 30 });
    expect(errorsOf(replayInputSchema.safeParse({ days: "0" }))).toEqual(["days: expected 1 to 30 days"]);
    expect(errorsOf(replayInputSchema.safeParse({ days: 31 }))).toEqual(["days: expected 1 to 30 days"]);
    expect(errorsOf(replayInputSchema.safeParse({ days: "2.5" }))).toEqual(["days: expected a whole number of days"]);
    expect(errorsOf(replayInputSchema.safeParse({ days: "abc" }))).toEqual(["days: expected a whole number of days"]);
    expect(replayInputSchema.safeParse({ days: 7, extra: 1 }).success).toBe(false);
  });

  it("the advisor's form: blanks take defaults, a bad limit, unit or scope names its field", () => {
    expect(advisorInputSchema.parse({ tier: "pro", operation: "", scope: "", limit: "", per: "" })).toEqual({ tier: "pro", operation: "*", scope: "api_key", per: "minute" });
    expect(advisorInputSchema.parse({ tier: "pro", limit: "25", per: "second", scope: "tenant" })).toEqual({ tier: "pro", operation: "*", scope: "tenant", limit: 25, per: "second" });
    expect(errorsOf(advisorInputSchema.safeParse({ tier: "pro", limit: "0" }))).toEqual(["limit: expected a whole number ≥ 1"]);
    expect(errorsOf(advisorInputSchema.safeParse({ tier: "pro", per: "week" }))).toEqual(["per: expected one of second, minute, hour"]);
    expect(errorsOf(advisorInputSchema.safeParse({ tier: "pro", scope: "planet" }))).toEqual(["scope: expected one of api_key, tenant, global, ip"]);
    expect(errorsOf(advisorInputSchema.safeParse({ tier: " " }))).toEqual(["tier: choose a tier"]);
  });

  it("capacity: requests per second > 0, utilisation in (0, 100] %, a window up to a day", () => {
    expect(capacityInputSchema.parse({ capacityPerSecond: "100", utilisationPct: "70", window: "1m" })).toEqual({ capacityPerSecond: 100, utilisationPct: 70, window: "1m" });
    expect(errorsOf(capacityInputSchema.safeParse({ capacityPerSecond: "-1", utilisationPct: "150", window: "soon" }))).toEqual([
      "capacityPerSecond: expected requests per second > 0",
      "utilisationPct: expected a percentage in (0, 100]",
      "window: expected a duration such as 1s or 1m (at most 1d)",
    ]);
    expect(errorsOf(capacityInputSchema.safeParse({ capacityPerSecond: "", utilisationPct: "0", window: "2d" }))).toEqual([
      "capacityPerSecond: expected requests per second > 0",
      "utilisationPct: expected a percentage in (0, 100]",
      "window: expected a duration such as 1s or 1m (at most 1d)",
    ]);
  });

  it("says each error with the field's label on the form, never its key (defect #29.9)", () => {
    const texts = (r: { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } }) => (r.success ? [] : fieldErrors(r.error!).map((e) => e.text));
    expect(texts(replayInputSchema.safeParse({ days: "0" }))).toEqual(["Days to replay: expected 1 to 30 days"]);
    expect(texts(capacityInputSchema.safeParse({ capacityPerSecond: "", utilisationPct: "70", window: "1m" }))).toEqual(["Downstream capacity (requests/s): expected requests per second > 0"]);
    expect(texts(advisorInputSchema.safeParse({ tier: "pro", limit: "0" }))).toEqual(["Proposed limit: expected a whole number ≥ 1"]);
  });
});
