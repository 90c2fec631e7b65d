import { readFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  parsePolicyInput,
  POLICY_FILE_MAX_ALIASES,
  POLICY_FILE_MAX_BYTES,
  POLICY_FILE_MAX_DEPTH,
  POLICY_FILE_MAX_NODES,
} from "./policy-input";
import { aliasBomb } from "@/test/hostile-policy";

const DEMO = readFileSync(path.resolve(import.meta.dirname, "../../../examples/demo-policy.yaml"), "utf8");

function refusal(input: Parameters<typeof parsePolicyInput>[0]): string {
  const r = parsePolicyInput(input);
  expect(r.ok).toBe(false);
  return r.ok ? "" : r.issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; ");
}

/** The parser's contract: a value or a non-empty list of issues, each a path and a message; never a throw. */
function wellFormed(input: Parameters<typeof parsePolicyInput>[0]): void {
  const r = parsePolicyInput(input);
  if (r.ok) return;
  expect(r.issues.length).toBeGreaterThan(0);
  for (const issue of r.issues) {
    expect(typeof issue.path).toBe("string");
    expect(typeof issue.message).toBe("string");
    expect(issue.message.length).toBeGreaterThan(0);
  }
}

describe("policy file bounds: a document over a bound is refused naming the bound, before it expands", () => {
  it("the demo policy is within every bound", () => {
    expect(parsePolicyInput(DEMO).ok).toBe(true);
  });

  it("a YAML alias bomb (nine levels of nine aliases) is refused as one", () => {
    expect(refusal(aliasBomb())).toBe(`the document's aliases expand too far (over ${POLICY_FILE_MAX_ALIASES} references: a YAML alias bomb?)`);
    // Anchors used a few times, as a policy file may, are fine.
    const anchored = DEMO.replace("tiers:", "x-limit: &std { operation: catalog, limit: 100, window: 1m }\ntiers:");
    expect(refusal(anchored)).not.toMatch(/alias/);
  });

  it("more than the byte bound is refused by size, as text and as bytes", () => {
    const big = `# ${"x".repeat(POLICY_FILE_MAX_BYTES)}\n${DEMO}`;
    expect(refusal(big)).toBe(`the document is over ${POLICY_FILE_MAX_BYTES} bytes`);
    expect(refusal(new TextEncoder().encode(big))).toBe(`the document is over ${POLICY_FILE_MAX_BYTES} bytes`);
  });

  it("more values than the node bound are refused by count (flow list, block mapping, JSON object)", () => {
    const many = `[${Array(POLICY_FILE_MAX_NODES + 1).fill("0").join(",")}]`;
    expect(many.length).toBeLessThan(POLICY_FILE_MAX_BYTES);
    expect(refusal(many)).toBe(`the document has over ${POLICY_FILE_MAX_NODES} values`);
    const keys = Array.from({ length: POLICY_FILE_MAX_NODES / 2 + 1 }, (_, i) => `k${i}: 1`).join("\n");
    expect(refusal(keys)).toBe(`the document has over ${POLICY_FILE_MAX_NODES} values`);
    expect(refusal({ version: 1, tenants: Array(POLICY_FILE_MAX_NODES).fill({}) })).toBe(`the document has over ${POLICY_FILE_MAX_NODES} values`);
  });

  it("nesting deeper than the depth bound is refused by depth (flow, block, JSON object), without overflowing the stack", () => {
    const tooDeep = `the document nests deeper than ${POLICY_FILE_MAX_DEPTH} levels`;
    expect(refusal(`x: ${"[".repeat(POLICY_FILE_MAX_DEPTH + 1)}${"]".repeat(POLICY_FILE_MAX_DEPTH + 1)}`)).toBe(tooDeep);
    expect(refusal(`x: ${"[".repeat(50_000)}${"]".repeat(50_000)}`)).toBe(tooDeep);
    const block = Array.from({ length: POLICY_FILE_MAX_DEPTH + 1 }, (_, i) => `${"  ".repeat(i)}k${i}:`).join("\n") + " 1";
    expect(refusal(block)).toBe(tooDeep);
    let value: unknown = 1;
    for (let i = 0; i < 10_000; i++) value = { a: value };
    expect(refusal(value as Record<string, unknown>)).toBe(tooDeep);
  });

  it("a key twice in one mapping is refused naming the key and its line", () => {
    expect(refusal(`version: 1\ndefaults: {}\nversion: 1\n`)).toBe(`line 3, column 1: Map keys must be unique ("version" twice)`);
    expect(refusal(DEMO.replace("tiers:", "tiers: []\ntiers:"))).toMatch(/^line \d+, column 1: Map keys must be unique \("tiers" twice\)$/);
  });
});

describe("policy file parser fuzz: never a throw, always a value or issues with a path and a message", () => {
  const demo = parse(DEMO) as Record<string, unknown>;
  const yamlPieces = fc.constantFrom(
    "version: 1\n", "tiers:\n", "  - ", "name: ", "&a ", "*a", "[", "]", "{", "}", ", ", ": ", "\n", "  ", "- ", "'", '"',
    "|\n", ">-\n", "!!str ", "!!binary ", "!!map ", "? ", "---\n", "...\n", "%YAML 1.2\n", "#", "<<: *a\n", "1e309", "0x1F",
    "~", "null", "true", "2026-12-03", "limit: -1", "window: 1m", "operation: catalog", "\t", "\u0000", "\uFEFF", "\uD800",
  );

  it("arbitrary text and bytes", () => {
    fc.assert(fc.property(fc.string({ maxLength: 400 }), (text) => wellFormed(text)), { numRuns: 300 });
    fc.assert(fc.property(fc.string({ unit: "binary", maxLength: 200 }), (text) => wellFormed(text)), { numRuns: 200 });
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => wellFormed(bytes)), { numRuns: 200 });
  });

  it("YAML assembled from the grammar's own pieces (anchors, aliases, merge keys, tags, flow and block, directives)", () => {
    fc.assert(fc.property(fc.array(yamlPieces, { maxLength: 60 }), (pieces) => wellFormed(pieces.join(""))), { numRuns: 1_000 });
  });

  it("the demo policy with a value anywhere replaced by anything JSON can say", () => {
    const paths: (string | number)[][] = [];
    const walk = (v: unknown, at: (string | number)[]) => {
      paths.push(at);
      if (v && typeof v === "object") for (const [k, c] of Object.entries(v)) walk(c, [...at, Array.isArray(v) ? Number(k) : k]);
    };
    walk(demo, []);
    fc.assert(
      fc.property(fc.constantFrom(...paths.filter((p) => p.length > 0)), fc.jsonValue({ maxDepth: 3 }), (at, replacement) => {
        const copy = structuredClone(demo);
        let parent: Record<string | number, unknown> = copy;
        for (const key of at.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
        parent[at[at.length - 1]!] = replacement;
        wellFormed(copy);
        wellFormed(JSON.stringify(copy));
      }),
      // Each run parses and compiles the whole demo policy twice.
      { numRuns: 60 },
    );
  }, 120_000);

  it("any JavaScript value as the object form", () => {
    fc.assert(fc.property(fc.anything({ maxDepth: 4 }), (value) => wellFormed(value as Record<string, unknown>)), { numRuns: 500 });
  });
});
