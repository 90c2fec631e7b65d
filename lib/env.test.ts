import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { DEFAULT_GRPC_LIMITS, type GrpcLimits } from "./net/grpc-limits";
import { childEnv, currentEnv, decisionGrpcLimits, decisionHttpSettings, ENV_VARIABLES, parseEnv } from "./env";
import { DEFAULT_HTTP_LIMITS, HTTP_SERVERS, type HttpLimits, type HttpServerKind } from "./net/http-server";

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

  it("reads the client-address rules, and names a bad header or proxy range", () => {
    const e = parseEnv({});
    expect([e.SLUICE_CLIENT_ADDRESS_HEADER, e.SLUICE_TRUSTED_PROXY_HOPS, e.SLUICE_TRUSTED_PROXIES]).toEqual(["x-real-ip,x-forwarded-for", 0, ""]);
    expect(parseEnv({ SLUICE_CLIENT_ADDRESS_HEADER: "X-Real-IP", SLUICE_TRUSTED_PROXY_HOPS: "2", SLUICE_TRUSTED_PROXIES: "10.0.0.0/8,fd00::/8" }).SLUICE_CLIENT_ADDRESS_HEADER).toBe("x-real-ip");
    expect(() => parseEnv({ SLUICE_CLIENT_ADDRESS_HEADER: "forwarded" })).toThrow(/SLUICE_CLIENT_ADDRESS_HEADER: expected x-real-ip,x-forwarded-for or x-forwarded-for or x-real-ip/);
    expect(() => parseEnv({ SLUICE_TRUSTED_PROXIES: "10.0.0.0/8, 10.0.0.0/33" })).toThrow(/SLUICE_TRUSTED_PROXIES: .*10\.0\.0\.0\/33/);
    expect(() => parseEnv({ SLUICE_TRUSTED_PROXY_HOPS: "-1" })).toThrow(/SLUICE_TRUSTED_PROXY_HOPS/);
  });

  it("serves Envoy's rate limit protocol on 8081 for domain sluice by default; SLUICE_GRPC_PORT=0 turns it off", () => {
    expect(parseEnv({})).toMatchObject({ SLUICE_GRPC_PORT: 8081, SLUICE_RLS_DOMAIN: "sluice" });
    expect(parseEnv({ SLUICE_GRPC_PORT: "0", SLUICE_RLS_DOMAIN: "edge" })).toMatchObject({ SLUICE_GRPC_PORT: 0, SLUICE_RLS_DOMAIN: "edge" });
    expect(() => parseEnv({ SLUICE_GRPC_PORT: "65536" })).toThrow(/SLUICE_GRPC_PORT/);
    expect(() => parseEnv({ SLUICE_RLS_DOMAIN: "" })).toThrow(/SLUICE_RLS_DOMAIN/);
  });
});

describe("regions (docs/regions.md)", () => {
  it("reads SLUICE_REGION and SLUICE_REGIONS; unset or empty means no region", () => {
    for (const source of [{}, { SLUICE_REGION: "", SLUICE_REGIONS: "" }]) {
      const e = parseEnv(source);
      expect(e.SLUICE_REGION).toBeUndefined();
      expect(e.SLUICE_REGIONS).toEqual([]);
    }
    const e = parseEnv({ SLUICE_REGION: "eu-west", SLUICE_REGIONS: "us=redis://10.0.0.1:6379, eu-west=rediss://:secret@redis.eu:6380/2" });
    expect(e.SLUICE_REGION).toBe("eu-west");
    expect(e.SLUICE_REGIONS).toEqual([
      { name: "us", redisUrl: "redis://10.0.0.1:6379" },
      { name: "eu-west", redisUrl: "rediss://:secret@redis.eu:6380/2" },
    ]);
  });

  it("names the bad entry: a missing =, a bad name, a name twice, a URL that is not Redis's", () => {
    expect(() => parseEnv({ SLUICE_REGION: "EU West" })).toThrow(/SLUICE_REGION: expected a region name/);
    expect(() => parseEnv({ SLUICE_REGIONS: "us=redis://a:6379,eu" })).toThrow(/SLUICE_REGIONS: entry 2 \("eu"\): expected <name>=<redis url>/);
    expect(() => parseEnv({ SLUICE_REGIONS: "US=redis://a:6379" })).toThrow(/SLUICE_REGIONS: entry 1 \("US=redis:\/\/a:6379"\): expected a region name/);
    expect(() => parseEnv({ SLUICE_REGIONS: "us=redis://a:6379,us=redis://b:6379" })).toThrow(/entry 2 .*: region us is listed twice/);
    expect(() => parseEnv({ SLUICE_REGIONS: "us=http://a:6379" })).toThrow(/entry 1 .*: expected a redis:\/\/ or rediss:\/\/ URL/);
    expect(() => currentEnv("SLUICE_REGIONS", { SLUICE_REGIONS: "eu=" })).toThrow(/SLUICE_REGIONS: entry 1/);
  });
});

describe("the decision server's HTTP settings", () => {
  it("default to lib/net/http-server.ts's HTTP_SERVERS[0] and DEFAULT_HTTP_LIMITS (which lib/env.ts may not import)", () => {
    const settings: { server: HttpServerKind; limits: HttpLimits } = decisionHttpSettings(parseEnv({}));
    expect(settings).toEqual({ server: HTTP_SERVERS[0], limits: DEFAULT_HTTP_LIMITS });
    for (const kind of HTTP_SERVERS) expect(parseEnv({ SLUICE_HTTP_SERVER: kind }).SLUICE_HTTP_SERVER).toBe(kind);
  });

  it("names a bad server, a limit out of bounds, and a head timeout longer than the request's", () => {
    expect(() => parseEnv({ SLUICE_HTTP_SERVER: "express" })).toThrow(/SLUICE_HTTP_SERVER: expected http1 or node/);
    expect(() => parseEnv({ SLUICE_HTTP_MAX_HEADERS: "0" })).toThrow(/SLUICE_HTTP_MAX_HEADERS/);
    expect(() => parseEnv({ SLUICE_HTTP_MAX_BODY_BYTES: "100000000" })).toThrow(/SLUICE_HTTP_MAX_BODY_BYTES/);
    expect(() => parseEnv({ SLUICE_HTTP_HEADERS_TIMEOUT_MS: "20000" })).toThrow(/SLUICE_HTTP_HEADERS_TIMEOUT_MS: must not exceed SLUICE_HTTP_REQUEST_TIMEOUT_MS/);
  });
});

describe("the decision server's gRPC limits", () => {
  it("default to lib/net/grpc-limits.ts's DEFAULT_GRPC_LIMITS; descriptor tokens are off", () => {
    const limits: GrpcLimits = decisionGrpcLimits(parseEnv({}));
    expect(limits).toEqual(DEFAULT_GRPC_LIMITS);
    expect(parseEnv({}).SLUICE_RLS_DESCRIPTOR_TOKENS).toBe("0");
  });

  it("names a limit out of bounds", () => {
    expect(() => parseEnv({ SLUICE_GRPC_MAX_STREAMS: "0" })).toThrow(/SLUICE_GRPC_MAX_STREAMS/);
    expect(() => parseEnv({ SLUICE_GRPC_MAX_SESSION_BYTES: "1000" })).toThrow(/SLUICE_GRPC_MAX_SESSION_BYTES/);
    expect(() => parseEnv({ SLUICE_GRPC_CALL_TIMEOUT_MS: "0" })).toThrow(/SLUICE_GRPC_CALL_TIMEOUT_MS/);
    expect(() => parseEnv({ SLUICE_GRPC_IDLE_TIMEOUT_MS: "never" })).toThrow(/SLUICE_GRPC_IDLE_TIMEOUT_MS/);
    expect(() => parseEnv({ SLUICE_RLS_DESCRIPTOR_TOKENS: "yes" })).toThrow(/SLUICE_RLS_DESCRIPTOR_TOKENS/);
  });
});

describe("currentEnv", () => {
  it("validates one variable as env() does, naming it, without requiring the rest to be valid", () => {
    expect(currentEnv("REDIS_TIMEOUT_MS", { REDIS_TIMEOUT_MS: "40", DECISION_PORT: "not a port" })).toBe(40);
    expect(() => currentEnv("DATABASE_URL", { DATABASE_URL: "not a url" })).toThrow(/^Invalid environment:\n {2}DATABASE_URL: /);
    expect(currentEnv("SLUICE_REDIS_PREFIX", {})).toBe("sl:");
    expect(currentEnv("DATABASE_URL", { DATABASE_URL: "" })).toBeUndefined();
  });

  it("follows a variable the process changes after start (the demo, tests pointing at their own database)", () => {
    const before = process.env.SLUICE_REDIS_PREFIX;
    try {
      process.env.SLUICE_REDIS_PREFIX = "a1:";
      expect(currentEnv("SLUICE_REDIS_PREFIX")).toBe("a1:");
      process.env.SLUICE_REDIS_PREFIX = "b2:";
      expect(currentEnv("SLUICE_REDIS_PREFIX")).toBe("b2:");
      process.env.SLUICE_REDIS_PREFIX = "no spaces allowed";
      expect(() => currentEnv("SLUICE_REDIS_PREFIX")).toThrow(/SLUICE_REDIS_PREFIX/);
    } finally {
      if (before === undefined) delete process.env.SLUICE_REDIS_PREFIX;
      else process.env.SLUICE_REDIS_PREFIX = before;
    }
  });

  it("childEnv hands children this process's environment plus the overrides", () => {
    const child = childEnv({ DECISION_PORT: "9999" });
    expect(child.DECISION_PORT).toBe("9999");
    expect(child.PATH).toBe(process.env.PATH);
  });
});

describe("the configuration table (docs/configuration.md)", () => {
  const root = path.resolve(import.meta.dirname, "..");
  const page = readFileSync(path.join(root, "docs", "configuration.md"), "utf8");
  const rows = page.split("\n").filter((l) => l.startsWith("| `"));
  const documented = new Set(rows.flatMap((r) => [...r.split(" | ")[0]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!)));

  it("lists every variable lib/env.ts reads", () => {
    expect(ENV_VARIABLES.filter((name) => !documented.has(name))).toEqual([]);
  });

  it("lists only variables something reads: lib/env.ts, or npm test's scripts and tool configs", () => {
    const outside = execFileSync("git", ["grep", "-l", "-E", "[A-Z]", "--", "scripts/", "*.config.ts", "*.config.mjs", "e2e/", "test/"], { cwd: root, encoding: "utf8" })
      .split("\n")
      .filter(Boolean)
      .map((f) => readFileSync(path.join(root, f), "utf8"))
      .join("\n");
    const known = new Set<string>(ENV_VARIABLES);
    expect([...documented].filter((name) => !known.has(name) && !new RegExp(`\\b${name}\\b`).test(outside))).toEqual([]);
  });
});
