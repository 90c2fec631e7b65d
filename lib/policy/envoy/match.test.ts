import { describe, expect, it } from "vitest";
import { compileRateLimitService } from "./compile";
import { envoyDomainIndex, matchEnvoyDescriptor, wildcardMatches } from "./match";
import { rateLimitServiceSchema, type EnvoyDescriptorSpec } from "./schema";

function matcher(domain: string, descriptors: EnvoyDescriptorSpec[]) {
  const service = compileRateLimitService(rateLimitServiceSchema.parse({ domains: [{ domain, descriptors }] }));
  const root = envoyDomainIndex(service, domain)!;
  return (...entries: [string, string][]) => matchEnvoyDescriptor(root, domain, entries.map(([key, value]) => ({ key, value })));
}
const limit = (requests_per_unit: number, unit = "minute") => ({ unit, requests_per_unit });

describe("the wildcard matcher", () => {
  it("matches each * against any run of characters, the empty one too, in order", () => {
    const parts = (p: string) => p.split("*");
    expect(wildcardMatches(parts("bar*b"), "barab")).toBe(true);
    expect(wildcardMatches(parts("bar*b"), "barb")).toBe(true);
    expect(wildcardMatches(parts("bar*b"), "bar")).toBe(false);
    expect(wildcardMatches(parts("bar*b"), "xbarb")).toBe(false);
    expect(wildcardMatches(parts("foo*bar*baz"), "foo123bar456baz")).toBe(true);
    expect(wildcardMatches(parts("foo*bar*baz"), "foobazbar")).toBe(false);
    expect(wildcardMatches(parts("ab*ba"), "aba")).toBe(false);
    expect(wildcardMatches(parts("exact"), "exact")).toBe(true);
  });
});

describe("which rule a descriptor selects, and its metric key (their config_test.go)", () => {
  it("prefers key_value, then the first matching wildcard in declaration order, then the key alone", () => {
    const m = matcher("d", [
      { key: "k", rate_limit: limit(1) },
      { key: "k", value: "ab*", rate_limit: limit(2) },
      { key: "k", value: "a*", rate_limit: limit(3) },
      { key: "k", value: "abc", rate_limit: limit(4) },
    ]);
    expect(m(["k", "abc"])?.rule.requestsPerUnit).toBe(4);
    expect(m(["k", "abd"])?.rule.requestsPerUnit).toBe(2);
    expect(m(["k", "ax"])?.rule.requestsPerUnit).toBe(3);
    expect(m(["k", "zz"])?.rule.requestsPerUnit).toBe(1);
  });

  it("names metrics by the config path, wildcards by their pattern", () => {
    const m = matcher("test-domain", [
      { key: "noVal", rate_limit: limit(20) },
      { key: "wild", value: "foo*", rate_limit: limit(20) },
      { key: "nestedWild", value: "val1", descriptors: [{ key: "wild", value: "goo*", rate_limit: limit(20) }] },
    ]);
    expect(m(["noVal", "foo1"])?.metricKey).toBe("test-domain.noVal");
    expect(m(["wild", "foo1"])?.metricKey).toBe("test-domain.wild_foo*");
    expect(m(["nestedWild", "val1"], ["wild", "goo2"])?.metricKey).toBe("test-domain.nestedWild_val1.wild_goo*");
  });

  it("detailed_metric puts every value in the key", () => {
    const m = matcher("nested", [
      { key: "key-1", detailed_metric: true, rate_limit: limit(100), descriptors: [{ key: "key-2", detailed_metric: true, rate_limit: limit(5) }] },
      { key: "key_1", detailed_metric: true, rate_limit: limit(500) },
    ]);
    expect(m(["key-1", "value-1"])?.metricKey).toBe("nested.key-1_value-1");
    expect(m(["key-1", "value-1"], ["key-2", "value-2"])?.metricKey).toBe("nested.key-1_value-1.key-2_value-2");
    expect(m(["key_1", "value-for-key-1"])?.metricKey).toBe("nested.key_1_value-for-key-1");
  });

  it("value_to_metric adds the runtime value where it is set", () => {
    const three = matcher("domain", [{ key: "route", value_to_metric: true, descriptors: [{ key: "http_method", value_to_metric: true, descriptors: [{ key: "subject_id", rate_limit: limit(60) }] }] }]);
    expect(three(["route", "draw"], ["http_method", "GET"], ["subject_id", "123"])?.metricKey).toBe("domain.route_draw.http_method_GET.subject_id");
    const mid = matcher("d", [{ key: "k1", descriptors: [{ key: "k2", value_to_metric: true, descriptors: [{ key: "k3", rate_limit: limit(1, "second") }] }] }]);
    expect(mid(["k1", "X"], ["k2", "Y"], ["k3", "Z"])?.metricKey).toBe("d.k1.k2_Y.k3");
    const wild = matcher("domain", [{ key: "user", value_to_metric: true, descriptors: [{ key: "action", value: "read*", value_to_metric: true, descriptors: [{ key: "resource", rate_limit: limit(100) }] }] }]);
    expect(wild(["user", "alice"], ["action", "readfile"], ["resource", "documents"])?.metricKey).toBe("domain.user_alice.action_readfile.resource");
    const detailedWins = matcher("domain", [{ key: "route", value_to_metric: true, descriptors: [{ key: "http_method", value_to_metric: true, descriptors: [{ key: "subject_id", detailed_metric: true, rate_limit: limit(60) }] }] }]);
    expect(detailedWins(["route", "draw"], ["http_method", "GET"], ["subject_id", "123"])?.metricKey).toBe("domain.route_draw.http_method_GET.subject_id_123");
  });

  it("share_threshold counts every match as the pattern, in the counter and in metrics", () => {
    const m = matcher("test-domain", [
      { key: "files", value: "files/*", share_threshold: true, rate_limit: limit(100) },
      { key: "route", value: "api/*", share_threshold: true, value_to_metric: true, descriptors: [{ key: "method", rate_limit: limit(60) }] },
      { key: "service", value: "svc/*", share_threshold: true, descriptors: [{ key: "endpoint", detailed_metric: true, rate_limit: limit(80) }] },
      { key: "path", value: "path/*", share_threshold: true, descriptors: [{ key: "file", value: "file/*", descriptors: [{ key: "type", rate_limit: limit(120) }] }] },
      { key: "tenant", value: "t*prod", share_threshold: true, descriptors: [{ key: "resource", value: "res*v2", share_threshold: true, rate_limit: limit(60) }] },
    ]);
    const a = m(["files", "files/a.pdf"])!;
    expect([a.shared, a.metricKey]).toEqual([["files/*"], "test-domain.files_files/*"]);
    expect(m(["route", "api/v1"], ["method", "GET"])?.metricKey).toBe("test-domain.route_api/*.method");
    expect(m(["service", "svc/user"], ["endpoint", "get"])?.metricKey).toBe("test-domain.service_svc/*.endpoint_get");
    const mixed = m(["path", "path/foo"], ["file", "file/doc1"], ["type", "pdf"])!;
    expect([mixed.shared, mixed.metricKey]).toEqual([["path/*", null, null], "test-domain.path_path/*.file_file/*.type"]);
    const both = m(["tenant", "t1prod"], ["resource", "resAv2"])!;
    expect([both.shared, both.metricKey]).toEqual([["t*prod", "res*v2"], "test-domain.tenant_t*prod.resource_res*v2"]);
  });

  it("finds no rule past the config's depth, on a level without a rule, or in an unknown domain", () => {
    const m = matcher("d", [{ key: "a", rate_limit: limit(1) }, { key: "b", value: "x", descriptors: [{ key: "c", rate_limit: limit(1) }] }]);
    expect(m(["a", "1"], ["z", "2"])).toBeNull();
    expect(m(["b", "x"])).toBeNull();
    expect(m()).toBeNull();
    const service = compileRateLimitService(rateLimitServiceSchema.parse({ domains: [{ domain: "d" }] }));
    expect(envoyDomainIndex(service, "other")).toBeNull();
  });
});
