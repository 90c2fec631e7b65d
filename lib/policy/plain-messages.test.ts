import { describe, expect, it } from "vitest";
import { z } from "zod";
import { issueInWords, plainMessage } from "./plain-messages";

const firstMessage = (schema: z.ZodType, input: unknown) => {
  const r = schema.safeParse(input);
  if (r.success) throw new Error("expected a failure");
  return r.error.issues[0]!.message;
};

describe("form errors in words (defect #29.9)", () => {
  it("says zod's built-in messages as what to enter, never 'Invalid input: expected number, received undefined'", () => {
    expect(plainMessage(firstMessage(z.number(), undefined))).toBe("required");
    expect(plainMessage(firstMessage(z.number(), "x"))).toBe("expected a number");
    expect(plainMessage(firstMessage(z.number().min(1), 0))).toBe("expected a number ≥ 1");
    expect(plainMessage(firstMessage(z.number().max(1000), 1001))).toBe("expected a number ≤ 1000");
    expect(plainMessage(firstMessage(z.string().min(1), ""))).toBe("required");
    expect(plainMessage(firstMessage(z.string().max(3), "abcd"))).toBe("expected at most 3 characters");
    expect(plainMessage(firstMessage(z.enum(["a", "b"]), "c"))).toBe("expected one of a, b");
    expect(plainMessage(firstMessage(z.strictObject({}), { extra: 1 }))).toBe("not a field here: extra");
    for (const m of [firstMessage(z.number(), undefined), firstMessage(z.number().min(1), 0)]) expect(plainMessage(m)).not.toMatch(/Invalid input|Too small/);
  });
  it("a message the schema wrote itself passes unchanged", () => {
    expect(plainMessage("expected 1 to 30 days")).toBe("expected 1 to 30 days");
  });
  it("names the field by its label, not its key", () => {
    expect(issueInWords({ path: "days", message: "expected 1 to 30 days" }, { days: "Days to replay" })).toBe("Days to replay: expected 1 to 30 days");
    expect(issueInWords({ path: "capacityPerSecond", message: "expected requests per second > 0" })).toBe("Capacity per second: expected requests per second > 0");
    expect(issueInWords({ path: "limits.0.weight", message: "Too small: expected number to be >=1" }, { weight: "Weight" })).toBe("Weight: expected a number ≥ 1");
    expect(issueInWords({ path: "", message: "required" })).toBe("Required");
  });
});
