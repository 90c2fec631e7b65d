import { describe, expect, it } from "vitest";
import { parseClusterNodes } from "./client";

describe("REDIS_CLUSTER_NODES parsing", () => {
  it("reads host:port lists, IPv6 hosts included, and names a bad entry", () => {
    expect(parseClusterNodes("127.0.0.1:7000, redis-b:7001,::1:7002")).toEqual([
      { host: "127.0.0.1", port: 7000 },
      { host: "redis-b", port: 7001 },
      { host: "::1", port: 7002 },
    ]);
    expect(() => parseClusterNodes("127.0.0.1")).toThrow(/expected host:port, got "127.0.0.1"/);
  });
});
