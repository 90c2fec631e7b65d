import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BUNDLED_ENTRIES } from "../lib/processes/harness";
import { bundleServer, packageOf, productionImportProblems, SERVER_ENTRIES, SERVER_OUTDIR } from "./build";

const pkg = JSON.parse(readFileSync(path.join(import.meta.dirname, "../package.json"), "utf8")) as Parameters<typeof productionImportProblems>[1];
const temp: string[] = [];
afterAll(() => {
  for (const dir of temp) rmSync(dir, { recursive: true, force: true });
});

describe("npm run build: the compiled processes", () => {
  it("bundle every entry, and import only packages npm prune --omit=dev keeps", async () => {
    const bundle = await bundleServer({ write: false });
    for (const name of Object.keys(SERVER_ENTRIES)) expect(bundle.outputs).toContain(`${SERVER_OUTDIR}/${name}.js`);
    expect(productionImportProblems(bundle, pkg)).toEqual([]);
    // The decision server really does reach its packages through node_modules, not a copy of its own.
    expect([...bundle.packages.values()].some((names) => names.has("ioredis"))).toBe(true);
  });

  it("include every entry the int tests start bundled (lib/processes/harness.ts BUNDLED_ENTRIES), under the same name", () => {
    const built = Object.fromEntries(Object.entries(SERVER_ENTRIES).map(([name, source]) => [source, `${name}.js`]));
    for (const [source, file] of Object.entries(BUNDLED_ENTRIES)) expect({ source, file }).toEqual({ source, file: built[source] });
  });

  it("name a dev dependency or an undeclared package a compiled file imports", () => {
    const bundle = { outputs: [], packages: new Map([["dist/server/worker.js", new Set(["zod", "tsx", "left-pad"])]]) };
    expect(productionImportProblems(bundle, { dependencies: { zod: "4" }, devDependencies: { tsx: "4" } })).toEqual([
      "dist/server/worker.js imports tsx, a devDependency, which npm prune --omit=dev removes",
      "dist/server/worker.js imports left-pad, not a dependency of package.json",
    ]);
  });

  it("refuse an entry another entry imports: moved into a shared chunk, it would never run", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "sluice-build-"));
    temp.push(dir);
    writeFileSync(path.join(dir, "a.ts"), `import { b } from "./b";\nconsole.log(b);\n`);
    writeFileSync(path.join(dir, "b.ts"), `export const b = 1;\n`);
    await expect(bundleServer({ write: false, root: dir, entries: { a: "a.ts", b: "b.ts" } })).rejects.toThrow(
      "b.ts is imported by another entry point, so dist/server/b.js would not run it: move what they share into a module of its own",
    );
  });
});

describe("packageOf", () => {
  it("names the package of an import, and nothing for Node's own modules", () => {
    expect(packageOf("@prisma/client/runtime/client")).toBe("@prisma/client");
    expect(packageOf("dotenv/config")).toBe("dotenv");
    expect(packageOf("pg")).toBe("pg");
    expect(packageOf("node:fs")).toBeNull();
    expect(packageOf("fs/promises")).toBeNull();
  });
});
