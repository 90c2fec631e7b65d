/**
 * `npm run build`: everything production runs, compiled, so that after `npm prune --omit=dev` each
 * process starts on plain node (docs/production.md "The build"):
 *
 * 1. every process that is not Next.js — the decision server, the worker, the `sluice` CLI (with
 *    `sluice migrate`), the control plane's launcher and the image's health check — bundled by
 *    esbuild into dist/server, and refused if it imports a package that is not a production
 *    dependency;
 * 2. the SDK (dist/client), as `prepare` builds it on a development install;
 * 3. the control plane: `next build` (which also type-checks the whole repository) with
 *    `output: "standalone"`, then Next's static files copied beside the standalone server, which
 *    serves them from there.
 *
 * Why esbuild and not tsc: tsc emits one file per module with its imports as written
 * (`../lib/env`, without an extension), which Node's ESM loader refuses, and the Prisma client is
 * TypeScript generated at install time (lib/generated/prisma) by a dev dependency. esbuild bundles
 * the repository's own code, that client included, into a few files in about a second, and leaves
 * every npm package an import that node resolves from the pruned node_modules. It is also the
 * transform tsx runs in development and the tests, so production runs the same JavaScript.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, readFileSync, rmSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import * as esbuild from "esbuild";

const ROOT = path.resolve(import.meta.dirname, "..");

/**
 * Where the compiled processes go. Two levels below the root, as lib/<area>/ is: code that finds a
 * file relative to its own module (lib/db/migrate.ts: ../../prisma/migrations) finds the same file
 * from dist/server, where esbuild puts it (entries and shared chunks alike).
 */
export const SERVER_OUTDIR = "dist/server";

/** Output name (dist/server/<name>.js) → source: the files package.json and the image run. */
export const SERVER_ENTRIES = {
  "control-plane": "worker/control-plane.ts",
  "decision-server": "worker/decision-server.ts",
  worker: "worker/jobs.ts",
  sluice: "worker/cli.ts",
  healthcheck: "worker/healthcheck.ts",
} as const;

export interface ServerBundle {
  /** Output files, relative to the root. */
  outputs: string[];
  /** npm packages the output imports (node resolves them at run time), by output file. */
  packages: Map<string, Set<string>>;
}

/** The package an import path names (`@prisma/client/runtime/client` → `@prisma/client`), null for a Node built-in. */
export function packageOf(specifier: string): string | null {
  if (specifier.startsWith("node:") || builtinModules.includes(specifier.split("/")[0]!)) return null;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

/** Bundles SERVER_ENTRIES (a test gives others, and their root); with `write: false` nothing touches the disk. */
export async function bundleServer(options: { write: boolean; entries?: Record<string, string>; root?: string; outdir?: string }): Promise<ServerBundle> {
  const result = await esbuild.build({
    absWorkingDir: options.root ?? ROOT,
    entryPoints: options.entries ?? SERVER_ENTRIES,
    // Elsewhere (the int tests' bundle) only at the same depth: ../../prisma must still be the root's.
    outdir: options.outdir ?? SERVER_OUTDIR,
    bundle: true,
    // Shared code goes to chunks, so an entry's `import.meta.url === argv[1]` check is true in that entry only.
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    packages: "external",
    sourcemap: true,
    metafile: true,
    write: options.write,
    logLevel: "warning",
  });
  const packages = new Map<string, Set<string>>();
  for (const [file, output] of Object.entries(result.metafile.outputs)) {
    if (!file.endsWith(".js")) continue;
    // An entry another entry imports is moved whole into a shared chunk, where its `import.meta.url
    // === argv[1]` check is never true: the process would start, do nothing and exit 0.
    if (output.entryPoint && !output.inputs[output.entryPoint]) {
      throw new Error(`${output.entryPoint} is imported by another entry point, so ${file} would not run it: move what they share into a module of its own`);
    }
    const names = new Set<string>();
    for (const i of output.imports) {
      const name = i.external ? packageOf(i.path) : null;
      if (name) names.add(name);
    }
    packages.set(file, names);
  }
  return { outputs: Object.keys(result.metafile.outputs), packages };
}

interface PackageJson {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/** Every package a compiled file imports that `npm prune --omit=dev` would not keep, as a sentence. */
export function productionImportProblems(bundle: ServerBundle, pkg: PackageJson): string[] {
  const problems: string[] = [];
  for (const [file, names] of bundle.packages) {
    for (const name of names) {
      if (pkg.dependencies?.[name]) continue;
      const why = pkg.devDependencies?.[name] ? "a devDependency, which npm prune --omit=dev removes" : "not a dependency of package.json";
      problems.push(`${file} imports ${name}, ${why}`);
    }
  }
  return problems;
}

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { cwd: ROOT, stdio: "inherit" });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status ?? result.signal})`);
}

async function main(): Promise<void> {
  rmSync(path.join(ROOT, SERVER_OUTDIR), { recursive: true, force: true });
  const bundle = await bundleServer({ write: true });
  const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as PackageJson;
  const problems = productionImportProblems(bundle, pkg);
  if (problems.length > 0) throw new Error(`the compiled processes need packages production will not have:\n  ${problems.join("\n  ")}`);
  // The `sluice` bin: npx runs the file itself (its first line is worker/cli.ts's #!/usr/bin/env node).
  chmodSync(path.join(ROOT, SERVER_OUTDIR, "sluice.js"), 0o755);
  console.log(`dist/server: ${bundle.outputs.filter((f) => f.endsWith(".js")).length} files (${Object.keys(SERVER_ENTRIES).join(", ")} and their shared chunks)`);

  run("npm", ["run", "build:client"]);

  run(path.join(ROOT, "node_modules", ".bin", "next"), ["build"]);
  const standalone = path.join(ROOT, ".next", "standalone");
  if (!existsSync(path.join(standalone, "server.js"))) throw new Error(`next build wrote no ${path.join(standalone, "server.js")} (is output: "standalone" in next.config.ts?)`);
  cpSync(path.join(ROOT, ".next", "static"), path.join(standalone, ".next", "static"), { recursive: true });
  if (existsSync(path.join(ROOT, "public"))) cpSync(path.join(ROOT, "public"), path.join(standalone, "public"), { recursive: true });
  console.log("control plane: .next/standalone (npm run start)");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(`build failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
