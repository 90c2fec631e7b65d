import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { compilePolicy, policyChecksum } from "./compile";
import { parsePolicyFile, formatIssue, type PolicyFileInput } from "./policy-file";
import { parseCompiledPolicy } from "./compiled-schema";
import { finalizePolicy } from "./compile";
import {
  DEFAULT_ACCURACY_TOLERANCE,
  DEFAULT_REJECT_P95_MS,
  parsePercent,
  requirementsForLimit,
  requirementsForOperation,
} from "./requirements";

const DEMO = parse(readFileSync(path.resolve(import.meta.dirname, "../../examples/demo-policy.yaml"), "utf8")) as PolicyFileInput;

function withRequirements(requirements: unknown) {
  return parsePolicyFile({ ...DEMO, requirements });
}

const errors = (requirements: unknown) => {
  const r = withRequirements(requirements);
  return r.ok ? [] : r.issues.map(formatIssue);
};

describe("the requirements block", () => {
  it("is optional: a policy without it compiles to the checksum it always had", () => {
    const parsed = parsePolicyFile(DEMO);
    expect(parsed.ok).toBe(true);
    const body = compilePolicy(DEMO as never);
    expect(body.requirements).toBeUndefined();
    expect(Object.keys(body)).not.toContain("requirements");
  });

  it("is validated like the rest of the file: every error names its path", () => {
    expect(errors({ accuracy: "five" })).toEqual(['requirements.accuracy: expected a percentage like 5%, got "five"']);
    expect(errors({ accuracy: "101%" })[0]).toMatch(/^requirements\.accuracy: /);
    expect(errors({ rejectP95: "fast" })).toEqual(['requirements.rejectP95: expected a duration like 50ms, got "fast"']);
    expect(errors({ boundaryBurst: "maybe" })[0]).toMatch(/^requirements\.boundaryBurst: /);
    expect(errors({ operations: [{ operation: "nope", failureMode: "closed" }] })).toEqual([
      'requirements.operations[0].operation: unknown operation "nope"',
    ]);
    expect(errors({ operations: [{ operation: "export", failureMode: "sideways" }] })[0]).toMatch(/^requirements\.operations\[0\]\.failureMode: /);
    expect(errors({ limits: [{ tier: "gold", operation: "*", scope: "api_key" }] })).toEqual(['requirements.limits[0].tier: unknown tier "gold"']);
    expect(errors({ limits: [{ tier: "free", operation: "*", scope: "global" }] })).toEqual([
      "requirements.limits[0]: tier free has no limit for operation *, scope global",
    ]);
    expect(errors({ operations: [{ operation: "export" }, { operation: "export" }] })).toEqual([
      'requirements.operations[1].operation: duplicate operation "export"',
    ]);
    expect(errors({ surprise: 1 })[0]).toMatch(/^requirements: /);
  });

  it("compiles to fractions and milliseconds, carried and checksummed in the published document", () => {
    const spec = { ...DEMO, requirements: { accuracy: "2.5%", rejectP95: "40ms", operations: [{ operation: "export", failureMode: "closed", boundaryBurst: "forbidden" }] } };
    const body = compilePolicy(spec as never);
    expect(body.requirements).toEqual({
      accuracy: 0.025,
      rejectP95Ms: 40,
      operations: [{ operation: "export", failureMode: "closed", boundaryBurst: "forbidden" }],
      limits: [],
    });
    const doc = finalizePolicy(body, 3, "2026-12-03T00:00:00.000Z");
    const read = parseCompiledPolicy(JSON.parse(JSON.stringify(doc)));
    expect(read.ok).toBe(true);
    expect(policyChecksum(body)).not.toBe(policyChecksum(compilePolicy(DEMO as never)));
  });

  it("parses percentages exactly", () => {
    expect(parsePercent("5%")).toBe(0.05);
    expect(parsePercent("0.5%")).toBe(0.005);
    expect(parsePercent("100%")).toBe(1);
    expect(parsePercent("5")).toBeNull();
    expect(parsePercent("-1%")).toBeNull();
  });
});

describe("resolving requirements", () => {
  const freeKey = { tier: "free", operation: "*", scope: "api_key", algorithm: "sliding_window_counter" } as const;
  const exportTenant = { tier: "enterprise", operation: "export", scope: "tenant", algorithm: "fixed_window" } as const;

  it("gives the stated defaults when the policy has no block: 5% accuracy, bursts allowed, 50 ms p95, no failure mode required", () => {
    expect(requirementsForLimit(undefined, freeKey)).toEqual({
      accuracy: { value: DEFAULT_ACCURACY_TOLERANCE, source: "default" },
      boundaryBurst: { value: "allowed", source: "default" },
    });
    expect(DEFAULT_ACCURACY_TOLERANCE).toBe(0.05);
    expect(requirementsForOperation(undefined, "export")).toEqual({ rejectP95Ms: { value: DEFAULT_REJECT_P95_MS, source: "default" }, failureMode: null });
    expect(DEFAULT_REJECT_P95_MS).toBe(50);
  });

  it("lets a limit entry beat an operation entry, and an operation entry beat the top level", () => {
    const req = compilePolicy({
      ...DEMO,
      requirements: {
        accuracy: "4%",
        operations: [{ operation: "export", accuracy: "3%", boundaryBurst: "forbidden", failureMode: "closed" }],
        limits: [{ tier: "enterprise", operation: "export", scope: "tenant", accuracy: "1%" }],
      },
    } as never).requirements;
    expect(requirementsForLimit(req, exportTenant)).toEqual({
      accuracy: { value: 0.01, source: "requirements.limits[0]" },
      boundaryBurst: { value: "forbidden", source: "requirements.operations[0]" },
    });
    expect(requirementsForLimit(req, { ...exportTenant, tier: "pro", algorithm: "token_bucket" }).accuracy).toEqual({ value: 0.03, source: "requirements.operations[0]" });
    expect(requirementsForLimit(req, { ...freeKey, operation: "search" }).accuracy).toEqual({ value: 0.04, source: "requirements.accuracy" });
  });

  it("holds a * row to the strictest operation entry, since it also decides those operations' requests", () => {
    const req = compilePolicy({
      ...DEMO,
      requirements: { operations: [{ operation: "search", boundaryBurst: "allowed", accuracy: "3%" }, { operation: "export", boundaryBurst: "forbidden", accuracy: "4%" }] },
    } as never).requirements;
    expect(requirementsForLimit(req, freeKey)).toEqual({
      accuracy: { value: 0.03, source: "requirements.operations[0]" },
      boundaryBurst: { value: "forbidden", source: "requirements.operations[1]" },
    });
  });

  it("takes an operation's own entry over the * entry for its failure mode and p95", () => {
    const req = compilePolicy({
      ...DEMO,
      requirements: { operations: [{ operation: "*", failureMode: "open", rejectP95: "20ms" }, { operation: "export", failureMode: "closed" }] },
    } as never).requirements;
    expect(requirementsForOperation(req, "export")).toEqual({
      rejectP95Ms: { value: 20, source: "requirements.operations[0]" },
      failureMode: { value: "closed", source: "requirements.operations[1]" },
    });
    expect(requirementsForOperation(req, "search").failureMode).toEqual({ value: "open", source: "requirements.operations[0]" });
  });
});
