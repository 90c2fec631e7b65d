import { describe, expect, it } from "vitest";
import { sluiceMode } from "../env";
import { checkSingleNodeEnv, SingleNodeConfigError } from "./config";

describe("SLUICE_MODE", () => {
  it("defaults to redis and accepts single-node", () => {
    expect(sluiceMode({})).toBe("redis");
    expect(sluiceMode({ SLUICE_MODE: "single-node" })).toBe("single-node");
  });

  it("refuses anything else, naming the variable and the choices", () => {
    expect(() => sluiceMode({ SLUICE_MODE: "memory" })).toThrow("SLUICE_MODE: expected redis or single-node");
  });
});

describe("checkSingleNodeEnv", () => {
  const ok = { DATABASE_URL: "postgresql://postgres@127.0.0.1:5432/sluice", REDIS_URL: undefined, REDIS_CLUSTER_NODES: undefined, SLUICE_INSTANCES: 1 };

  it("needs only DATABASE_URL", () => {
    expect(checkSingleNodeEnv(ok)).toEqual({ problems: [], warnings: [] });
  });

  it("names every problem's variable: no database, a cluster, more than one instance", () => {
    const { problems } = checkSingleNodeEnv({ DATABASE_URL: undefined, REDIS_URL: undefined, REDIS_CLUSTER_NODES: "127.0.0.1:7000", SLUICE_INSTANCES: 2 });
    expect(problems.map((p) => p.split(":")[0])).toEqual(["DATABASE_URL", "REDIS_CLUSTER_NODES", "SLUICE_INSTANCES"]);
    expect(new SingleNodeConfigError(problems).message).toContain("SLUICE_MODE=single-node is misconfigured:\n  DATABASE_URL: required");
  });

  it("warns that REDIS_URL is ignored", () => {
    expect(checkSingleNodeEnv({ ...ok, REDIS_URL: "redis://127.0.0.1:6379" }).warnings).toEqual(["REDIS_URL is set but ignored: SLUICE_MODE=single-node never uses Redis"]);
  });
});
