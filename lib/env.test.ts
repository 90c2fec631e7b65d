import { describe, expect, it } from "vitest";
import { parseEnv } from "./env";

describe("parseEnv", () => {
  it("reads an empty URL variable as unset (REDIS_URL= with only REDIS_CLUSTER_NODES given)", () => {
    const e = parseEnv({ REDIS_URL: "", DATABASE_URL: "", REDIS_CLUSTER_NODES: "127.0.0.1:7000,127.0.0.1:7001" });
    expect(e.REDIS_URL).toBeUndefined();
    expect(e.DATABASE_URL).toBeUndefined();
    expect(e.REDIS_CLUSTER_NODES).toBe("127.0.0.1:7000,127.0.0.1:7001");
  });

  it("keeps an empty SLUICE_REDIS_PREFIX, which is a valid prefix and not the default", () => {
    expect(parseEnv({ SLUICE_REDIS_PREFIX: "" }).SLUICE_REDIS_PREFIX).toBe("");
    expect(parseEnv({}).SLUICE_REDIS_PREFIX).toBe("sl:");
  });

  it("names every bad variable", () => {
    expect(() => parseEnv({ REDIS_URL: "not a url", REDIS_TIMEOUT_MS: "0" })).toThrow(/REDIS_URL: .*\n.*REDIS_TIMEOUT_MS: /s);
  });
});
