import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../lib/redis/key-index";
import { ServiceTokens } from "./service-tokens";

describe("service tokens' use, noted on the request path", () => {
  it("notes each accepted published token once, however often it is used, and hands the set over once", () => {
    const tokens = new ServiceTokens(["fixed-env-token"]);
    tokens.replacePublished(new Set([sha256Hex("svc_a"), sha256Hex("svc_b")]));
    for (let i = 0; i < 1000; i++) expect(tokens.accepts("svc_a")).toBe(true);
    expect(tokens.accepts("fixed-env-token")).toBe(true);
    expect(tokens.accepts("svc_unknown")).toBe(false);
    // One entry for a thousand uses; SLUICE_SERVICE_TOKENS entries have no row to stamp.
    expect(tokens.takeUsed()).toEqual([sha256Hex("svc_a")]);
    expect(tokens.takeUsed()).toEqual([]);
  });
});
