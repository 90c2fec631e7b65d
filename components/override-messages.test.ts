import { describe, expect, it } from "vitest";
import { inFormTerms } from "./override-messages";

describe("override errors in the form's terms", () => {
  it("drops the policy file's path and says what to do", () => {
    expect(inFormTerms("tenants[11].overrides[0].window: required: tier startup has no sliding_window_counter limit for operation export, scope tenant to inherit it from")).toBe(
      "Window needed: tier startup has no sliding window counter limit for export per tenant to take it from. Enter it here (e.g. 1m), or pick an algorithm the tier has.",
    );
    expect(inFormTerms("tenants[2].overrides[1].limit: expected a positive integer")).toBe("expected a positive integer");
  });
  it("leaves a message without a path as it is", () => {
    expect(inFormTerms("Tenant acme not found")).toBe("Tenant acme not found");
  });
});
