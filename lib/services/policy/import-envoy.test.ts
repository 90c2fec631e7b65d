import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { importEnvoyConfigs, type ImportResult } from "./import-envoy";
import { parsePolicyInput } from "./policy-input";

const file = (name: string, text: string) => ({ name, text });
const issues = (r: ImportResult) => (r.ok ? [] : r.issues);
const domainsOf = (r: ImportResult) => {
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  const p = parsePolicyInput(r.text);
  if (!p.ok) throw new Error(JSON.stringify(p.issues));
  return p.value.rateLimitService?.domains ?? [];
};

describe("sluice import envoy reads their files as their loader does", () => {
  it("reads YAML 1.1 and takes string fields as written: value: 010 is \"010\", value: yes is \"yes\", shadow_mode: yes is true", () => {
    const r = importEnvoyConfigs([file("a.yaml", "domain: d\ndescriptors:\n  - key: k\n    value: 010\n    shadow_mode: yes\n    rate_limit: {unit: second, requests_per_unit: 0x10}\n  - key: 5\n    value: yes\n")]);
    expect(domainsOf(r)).toEqual([
      {
        domain: "d",
        descriptors: [
          { key: "k", value: "010", shadow_mode: true, rate_limit: { unit: "second", requests_per_unit: 16 } },
          { key: "5", value: "yes" },
        ],
      },
    ]);
  });

  it("applies << merges and anchors, and drops empty values as theirs does (value: ~ is no value)", () => {
    const r = importEnvoyConfigs([
      file("a.yaml", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: &per_minute\n      unit: minute\n      requests_per_unit: 5\n  - key: b\n    value: ~\n    rate_limit:\n      <<: *per_minute\n      requests_per_unit: 7\n"),
    ]);
    expect(domainsOf(r)[0]?.descriptors).toEqual([
      { key: "a", rate_limit: { unit: "minute", requests_per_unit: 5 } },
      { key: "b", rate_limit: { requests_per_unit: 7, unit: "minute" } },
    ]);
  });

  it("writes requests_per_unit: 0 where theirs reads a missing one as 0, and says so", () => {
    const r = importEnvoyConfigs([file("a.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n")]);
    expect(domainsOf(r)[0]?.descriptors?.[0]?.rate_limit).toEqual({ unit: "second", requests_per_unit: 0 });
    expect(r.ok && r.notes).toEqual([expect.stringMatching(/^a\.yaml: descriptors\[0\]\.rate_limit: requests_per_unit absent/)]);
  });

  it("refuses what theirs would silently ignore: a second document, a duplicate key, a field at the wrong level", () => {
    expect(issues(importEnvoyConfigs([file("two.yaml", "domain: a\n---\ndomain: b\n")]))).toEqual([
      { file: "two.yaml", line: 2, path: "", message: expect.stringMatching(/second YAML document/) },
    ]);
    expect(issues(importEnvoyConfigs([file("dup.yaml", "domain: a\ndomain: b\n")]))[0]).toMatchObject({ file: "dup.yaml", message: expect.stringMatching(/unique/) });
    expect(issues(importEnvoyConfigs([file("lvl.yaml", "domain: a\ndescriptors:\n  - key: k\n    unit: second\n    requests_per_unit: 5\n")]))).toEqual([
      { file: "lvl.yaml", line: 4, path: "descriptors[0].unit", message: expect.stringMatching(/does not belong at this level/) },
      { file: "lvl.yaml", line: 5, path: "descriptors[0].requests_per_unit", message: expect.stringMatching(/does not belong at this level/) },
    ]);
  });

  it("refuses Sluice's own fields in their files, pointing to the policy file", () => {
    expect(issues(importEnvoyConfigs([file("s.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, algorithm: sliding_window_counter}\n")]))).toEqual([
      { file: "s.yaml", line: 4, path: "descriptors[0].rate_limit.algorithm", message: expect.stringMatching(/Sluice's additions go in the policy file's rateLimitService section/) },
    ]);
  });

  it("names the line of a problem deep in a file", () => {
    const text = "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n        rate_limit:\n          unit: fortnight\n          requests_per_unit: 1\n";
    expect(issues(importEnvoyConfigs([file("deep.yaml", text)]))).toEqual([
      { file: "deep.yaml", line: 7, path: "descriptors[0].descriptors[0].rate_limit.unit", message: expect.stringMatching(/invalid rate limit unit/) },
    ]);
  });

  it("refuses a duplicate domain across files unless merging, naming the second file", () => {
    const files = [file("a.yaml", "domain: d\ndescriptors:\n  - key: a\n"), file("b.yaml", "domain: d\ndescriptors:\n  - key: b\n")];
    expect(issues(importEnvoyConfigs(files))).toEqual([{ file: "b.yaml", path: "domain", message: expect.stringMatching(/duplicate domain "d", also in a\.yaml.*--merge-domains/) }]);
    expect(domainsOf(importEnvoyConfigs(files, { mergeDomains: true }))).toEqual([{ domain: "d", descriptors: [{ key: "a" }, { key: "b" }] }]);
  });
});

describe("--into POLICY", () => {
  const policy = "# our policy\nversion: 1\ntiers:\n  - name: free # the default tier\n    limits: []\n";

  it("keeps the policy's content and comments and adds the domains", () => {
    const r = importEnvoyConfigs([file("m.yaml", "domain: m\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 3}\n")], { into: file("policy.yaml", policy) });
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    expect(r.text).toContain("# our policy");
    expect(r.text).toContain("# the default tier");
    expect(parse(r.text)).toMatchObject({ tiers: [{ name: "free" }], rateLimitService: { domains: [{ domain: "m" }] } });
  });

  it("refuses a domain the policy already has unless --replace, which replaces it in place", () => {
    const withDomain = `${policy}rateLimitService:\n  domains:\n    - domain: m\n    - domain: other\n`;
    const m = file("m.yaml", "domain: m\ndescriptors:\n  - key: new\n");
    expect(issues(importEnvoyConfigs([m], { into: file("policy.yaml", withDomain) }))).toEqual([
      { file: "policy.yaml", path: "rateLimitService.domains[0].domain", message: expect.stringMatching(/already in this policy; pass --replace/) },
    ]);
    expect(domainsOf(importEnvoyConfigs([m], { into: file("policy.yaml", withDomain), replace: true }))).toEqual([{ domain: "m", descriptors: [{ key: "new" }] }, { domain: "other" }]);
  });

  it("refuses a policy that does not validate, naming it", () => {
    expect(issues(importEnvoyConfigs([file("m.yaml", "domain: m\n")], { into: file("policy.yaml", "version: 2\n") }))).toEqual([{ file: "policy.yaml", path: "version", message: "expected 1" }]);
  });
});
