import { describe, expect, it } from "vitest";
import { parsePolicyFile } from "../policy-file";

const policy = (rateLimitService: unknown) => parsePolicyFile({ version: 1, rateLimitService });
const issuesOf = (rateLimitService: unknown) => {
  const r = policy(rateLimitService);
  return r.ok ? [] : r.issues;
};
const domain = (descriptors: unknown[]) => ({ domains: [{ domain: "d", descriptors }] });
const rule = (rate_limit: unknown) => domain([{ key: "k", rate_limit }]);

describe("the rateLimitService section: their config documents, as strict as their loader", () => {
  it("takes their documents field for field, snake_case and any unit case", () => {
    const r = policy({
      domains: [
        {
          domain: "messaging",
          descriptors: [
            { key: "message_type", value: "marketing", descriptors: [{ key: "to_number", rate_limit: { unit: "day", requests_per_unit: 5 } }] },
            { key: "to_number", rate_limit: { unit: "DAY", requests_per_unit: 100, name: "per_number" }, shadow_mode: true, detailed_metric: true },
            { key: "files", value: "files/*", share_threshold: true, value_to_metric: true, quota_mode: true, rate_limit: { unit: "Hour", requests_per_unit: 10 } },
            { key: "ldap", rate_limit: { unlimited: true, requests_per_unit: 7 }, metadata: { team: { name: "auth" } } },
            { key: "other", rate_limit: { unit: "week", requests_per_unit: 0, replaces: [{ name: "per_number" }] } },
          ],
        },
      ],
    });
    expect(r.ok ? [] : r.issues).toEqual([]);
  });

  it("refuses a duplicate domain, naming the second", () => {
    expect(issuesOf({ domains: [{ domain: "a" }, { domain: "a" }] })).toContainEqual({ path: "rateLimitService.domains[1].domain", message: 'duplicate domain "a" (also domains[0])' });
  });

  it("refuses the same composite key twice at one level, even spelled as key and as key_value", () => {
    expect(issuesOf(domain([{ key: "a", value: "b" }, { key: "a", value: "b" }]))[0]?.path).toBe("rateLimitService.domains[0].descriptors[1]");
    expect(issuesOf(domain([{ key: "a_b" }, { key: "a", value: "b" }]))[0]?.message).toMatch(/composite key "a_b"/);
    expect(issuesOf(domain([{ key: "a", descriptors: [{ key: "x" }] }, { key: "b", descriptors: [{ key: "x" }] }]))).toEqual([]);
  });

  it("refuses unlimited with a unit, an empty replaces entry and a rule replacing itself", () => {
    expect(issuesOf(rule({ unlimited: true, unit: "day" }))).toContainEqual(expect.objectContaining({ path: "rateLimitService.domains[0].descriptors[0].rate_limit.unit", message: expect.stringMatching(/unlimited/) }));
    expect(issuesOf(rule({ unit: "second", requests_per_unit: 1, replaces: [{ name: "" }] }))[0]?.path).toBe("rateLimitService.domains[0].descriptors[0].rate_limit.replaces[0].name");
    expect(issuesOf(rule({ unit: "second", requests_per_unit: 1, name: "me", replaces: [{ name: "me" }] }))[0]?.message).toMatch(/cannot replace itself/);
  });

  it("refuses share_threshold on a descriptor without a wildcard", () => {
    expect(issuesOf(domain([{ key: "files", value: "files/a", share_threshold: true }]))).toEqual([
      { path: "rateLimitService.domains[0].descriptors[0].share_threshold", message: 'only with a wildcard value (containing *); "files_files/a" has none' },
    ]);
  });

  it("refuses unknown fields at every level, an unknown unit and an empty key or domain", () => {
    expect(issuesOf(domain([{ key: "k", ratelimit: {} }]))[0]?.path).toBe("rateLimitService.domains[0].descriptors[0]");
    expect(issuesOf(rule({ unit: "fortnight", requests_per_unit: 1 }))[0]?.message).toMatch(/expected one of second, minute, hour, day, week, month, year, got "fortnight"/);
    expect(issuesOf(domain([{ key: "" }]))[0]?.path).toBe("rateLimitService.domains[0].descriptors[0].key");
    expect(issuesOf({ domains: [{ domain: "" }] })[0]?.path).toBe("rateLimitService.domains[0].domain");
    expect(issuesOf({ domains: [], unknownDomains: "ok" })[0]?.message).toMatch(/unknownDomains/);
  });

  it("asks for requests_per_unit where theirs would read a missing one as 0", () => {
    expect(issuesOf(rule({ unit: "second" }))[0]).toEqual(expect.objectContaining({ path: "rateLimitService.domains[0].descriptors[0].rate_limit.requests_per_unit" }));
    expect(issuesOf(rule({ unit: "second", requests_per_unit: 4_294_967_296 }))[0]?.message).toMatch(/≤ 4294967295/);
  });
});

describe("Sluice's additions on a rate_limit: optional, and checked", () => {
  it("take every algorithm but concurrency, a window of whole seconds, a calendar period and a failure mode", () => {
    for (const algorithm of ["fixed_window", "sliding_window_log", "sliding_window_counter", "token_bucket", "leaky_bucket"]) {
      expect(issuesOf(rule({ unit: "minute", requests_per_unit: 10, algorithm })), algorithm).toEqual([]);
    }
    expect(issuesOf(rule({ window: "90s", requests_per_unit: 10, algorithm: "sliding_window_counter", precision: 4, failureMode: "closed" }))).toEqual([]);
    expect(issuesOf(rule({ period: "month", requests_per_unit: 10000 }))).toEqual([]);
    expect(issuesOf(rule({ window: "15m", requests_per_unit: 10, algorithm: "token_bucket", burst: 20 }))).toEqual([]);
    expect(issuesOf(rule({ unit: "minute", requests_per_unit: 10, algorithm: "concurrency" }))[0]?.message).toMatch(/concurrency needs a release/);
  });

  it("refuse what does not fit together", () => {
    const at = (r: unknown) => issuesOf(rule(r)).map((i) => `${i.path.replace("rateLimitService.domains[0].descriptors[0].rate_limit.", "")}: ${i.message}`);
    expect(at({ unit: "minute", window: "90s", requests_per_unit: 1 })).toEqual(["window: give unit or window, not both"]);
    expect(at({ period: "day", unit: "day", requests_per_unit: 1 })).toEqual(["period: give period alone, without unit or window"]);
    expect(at({ period: "day", algorithm: "fixed_window", requests_per_unit: 1 })).toEqual(["algorithm: not allowed with period (a calendar period is counted as a quota)"]);
    expect(at({ window: "1500ms", requests_per_unit: 1 })).toEqual(['window: expected a duration of whole seconds like 90s or 15m, got "1500ms"']);
    expect(at({ unit: "minute", requests_per_unit: 1, burst: 3 })).toEqual(["burst: only with algorithm token_bucket or leaky_bucket"]);
    expect(at({ unit: "minute", requests_per_unit: 1, precision: 3, algorithm: "sliding_window_log" })).toEqual(["precision: only with algorithm sliding_window_counter"]);
    expect(at({ unlimited: true, algorithm: "token_bucket", failureMode: "open" })).toEqual([
      "algorithm: not allowed with unlimited: true (nothing is counted)",
      "failureMode: not allowed with unlimited: true (nothing is counted)",
    ]);
    expect(at({ window: "1m", requests_per_unit: 0 })[0]).toMatch(/^requests_per_unit: expected ≥ 1/);
    expect(at({ requests_per_unit: 5 })).toEqual(["unit: required: one of second, minute, hour, day, week, month, year (or Sluice's window or period)"]);
  });
});
