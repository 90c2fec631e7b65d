/**
 * The simulator runs in the browser (a "use client" component): everything it imports ends up in
 * the client bundle. Walks its import graph the way the bundler resolves it (relative and `@/`
 * specifiers, type-only imports left out as TypeScript erases them) and asserts that no server-side
 * module is reached: no Redis, no database, no environment, no Node built-in.
 */
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const ENTRY = path.join(ROOT, "components/simulator/simulator.tsx");

function resolveLocal(from: string, spec: string): string | null {
  const base = spec.startsWith("@/") ? path.join(ROOT, spec.slice(2)) : spec.startsWith(".") ? path.resolve(path.dirname(from), spec) : null;
  if (base === null) return null;
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, path.join(base, "index.ts")]) {
    if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate;
  }
  throw new Error(`cannot resolve ${spec} from ${path.relative(ROOT, from)}`);
}

/** The value imports (and re-exports) of one file: `import type` and `export type` are erased. */
function valueImports(file: string): string[] {
  const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (!clause.name && clause.namedBindings !== undefined && ts.isNamedImports(clause.namedBindings) && clause.namedBindings.elements.length > 0 && clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      if (!typeOnly) out.push((statement.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isExportDeclaration(statement) && statement.moduleSpecifier && !statement.isTypeOnly) {
      out.push((statement.moduleSpecifier as ts.StringLiteral).text);
    }
  }
  return out;
}

/** Every module reached from `entry`: local files (relative to the root) and bare packages. */
function importGraph(entry: string): { files: Map<string, string>; packages: Map<string, string> } {
  const files = new Map<string, string>([[path.relative(ROOT, entry), "(entry)"]]);
  const packages = new Map<string, string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    for (const spec of valueImports(file)) {
      const local = resolveLocal(file, spec);
      const by = path.relative(ROOT, file);
      if (local === null) {
        if (!packages.has(spec)) packages.set(spec, by);
        continue;
      }
      const rel = path.relative(ROOT, local);
      if (files.has(rel)) continue;
      files.set(rel, by);
      queue.push(local);
    }
  }
  return { files, packages };
}

const SERVER_ONLY = [/^lib\/redis\//, /^lib\/db\//, /^lib\/env\.ts$/, /^lib\/net\//, /^lib\/auth\//, /^lib\/services\//, /^lib\/generated\//, /\/testing\//, /^test\//];
const SERVER_PACKAGES = [/^node:/, /^ioredis$/, /^pg$/, /^@prisma\//, /^pino/, /^next-auth/];

describe("the browser simulator's client bundle", () => {
  const { files, packages } = importGraph(ENTRY);

  it("reaches the pure core and the engine's planning, as the simulation needs", () => {
    // Guards the walk itself: an entry that imported nothing would pass the checks below.
    expect(files.has("lib/decision/checks.ts")).toBe(true);
    expect(files.has("lib/store/memory.ts")).toBe(true);
  });

  it("pulls in no Redis, database, environment or other server-side module", () => {
    const server = [...files].filter(([file]) => SERVER_ONLY.some((re) => re.test(file))).map(([file, by]) => `${file} (imported by ${by})`);
    expect(server).toEqual([]);
  });

  it("imports no Node built-in and no server-side package", () => {
    const server = [...packages].filter(([spec]) => SERVER_PACKAGES.some((re) => re.test(spec))).map(([spec, by]) => `${spec} (imported by ${by})`);
    expect(server).toEqual([]);
  });
});
