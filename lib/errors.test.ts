import { describe, expect, it } from "vitest";
import { errorBody, ERROR_STATUS, invalidPolicy, ServiceError } from "./errors";
import { errorResponse } from "./http/errors";

describe("one error envelope", () => {
  it("every code has a 4xx or 5xx status, and its envelope always carries field (null when about no single field)", () => {
    for (const [code, status] of Object.entries(ERROR_STATUS) as [keyof typeof ERROR_STATUS, number][]) {
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(600);
      expect(errorBody(code, "m")).toEqual({ error: { code, message: "m", field: null } });
      expect(errorBody(code, "m", { field: "cost" })).toEqual({ error: { code, message: "m", field: "cost" } });
    }
  });

  it("issues appear only when there are any; a policy error's field is its first issue's path", async () => {
    expect("issues" in errorBody("invalid_request", "m", { issues: [] }).error).toBe(false);
    const e = invalidPolicy([{ path: "tiers[0].weight", message: "expected a number" }, { path: "tiers[1]", message: "x" }]);
    const res = errorResponse(e);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: {
        code: "invalid_policy",
        message: "tiers[0].weight: expected a number (and 1 more)",
        field: "tiers[0].weight",
        issues: [{ path: "tiers[0].weight", message: "expected a number" }, { path: "tiers[1]", message: "x" }],
      },
    });
    expect((await errorResponse(new ServiceError("unknown_reservation", "gone")).json()).error.field).toBeNull();
  });
});
