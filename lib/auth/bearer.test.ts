import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { apiKeyFrom } from "../client/http";
import { bearerToken } from "./bearer";

describe("bearerToken: the one grammar of Authorization: Bearer", () => {
  it.each([
    ["Bearer sl_svc_abc", "sl_svc_abc"],
    ["bearer sl_svc_abc", "sl_svc_abc"],
    ["BEARER  sl_svc_abc ", "sl_svc_abc"],
    ["Bearer\tsl_svc_abc", "sl_svc_abc"],
    ["  Bearer a.b-c_d~e+f/g==", "a.b-c_d~e+f/g=="],
  ])("reads %j as its token", (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });

  it.each([
    ["absent", undefined],
    ["empty", ""],
    ["another scheme", "Basic dXNlcjpwYXNz"],
    ["no token", "Bearer "],
    ["no separator", "Bearersl_svc_abc"],
    ["a space inside the token", "Bearer abc def"],
    ["a non-ASCII token", "Bearer tökén"],
    ["a control character", "Bearer abc\u0001"],
  ])("is no token for %s", (_what, header) => {
    expect(bearerToken(header)).toBeUndefined();
  });

  it("agrees with the SDK's own copy (lib/client/http.ts apiKeyFrom), which ships without Sluice's code", () => {
    const char = fc.constantFrom("B", "b", "e", "a", "r", "R", " ", "\t", "x", "_", "=", "ö", "\u0001", ":", "/");
    const header = fc.oneof(
      fc.string({ unit: char, maxLength: 16 }),
      fc.tuple(fc.constantFrom("Bearer", "bearer", "BeArEr", "Basic", ""), fc.constantFrom(" ", "  ", "\t", ""), fc.string({ unit: char, maxLength: 10 })).map(([s, sep, t]) => `${s}${sep}${t}`),
    );
    fc.assert(
      fc.property(header, (h) => {
        expect(apiKeyFrom((name) => (name === "authorization" ? h : null)) ?? undefined).toBe(bearerToken(h));
      }),
      { numRuns: 5_000 },
    );
  });
});
