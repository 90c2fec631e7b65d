/**
 * `sluice import envoy PATH... [--into POLICY] [--merge-domains] [--replace]`: envoyproxy/ratelimit
 * config files → a complete policy file on stdout (lib/services/policy/import-envoy.ts), notes on stderr.
 * Anything it cannot carry over is an error naming file, line and path, and the exit code is 1.
 *
 * A PATH is a config file, or a directory: their runtime layout
 * (RUNTIME_ROOT/RUNTIME_SUBDIRECTORY, whose `config/` they load: every file in it and below, as
 * their runtime loader does), or else a flat directory of `*.yaml` / `*.yml` files. Files are read
 * in path order, so a duplicate domain is reported in the later file.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { Command } from "commander";
import { importEnvoyConfigs, type EnvoyConfigFile, type ImportIssue } from "../../lib/services/policy/import-envoy";

export interface ImportCommandDeps {
  write: (text: string) => void;
  /** Notes and errors, on stderr. */
  warn: (line: string) => void;
  setExitCode: (code: number) => void;
}

/** A path the command cannot read: reported as the CLI reports any error, naming it. */
export class ImportPathError extends Error {}

async function kindOf(p: string): Promise<"file" | "dir" | null> {
  try {
    const s = await stat(p);
    return s.isDirectory() ? "dir" : s.isFile() ? "file" : null;
  } catch {
    return null;
  }
}

/** Every regular file under `dir`, in path order. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

/** The config files PATH stands for (see the header). */
export async function envoyConfigPaths(p: string): Promise<string[]> {
  const kind = await kindOf(p);
  if (kind === null) throw new ImportPathError(`${p}: no such file or directory`);
  if (kind === "file") return [p];
  if ((await kindOf(path.join(p, "config"))) === "dir") {
    const files = await filesUnder(path.join(p, "config"));
    if (files.length === 0) throw new ImportPathError(`${path.join(p, "config")}: no config file in it`);
    return files;
  }
  const flat = (await readdir(p, { withFileTypes: true })).filter((e) => e.isFile() && /\.ya?ml$/.test(e.name)).map((e) => path.join(p, e.name)).sort();
  if (flat.length === 0) throw new ImportPathError(`${p}: no config/ directory (their RUNTIME_ROOT/RUNTIME_SUBDIRECTORY layout) and no .yaml file in it`);
  return flat;
}

async function readAll(paths: readonly string[]): Promise<EnvoyConfigFile[]> {
  const files: EnvoyConfigFile[] = [];
  for (const p of paths) {
    for (const name of await envoyConfigPaths(p)) files.push({ name, text: await readFile(name, "utf8") });
  }
  return files;
}

export function formatImportIssue(i: ImportIssue): string {
  const where = `${i.file}${i.line ? `:${i.line}` : ""}`;
  return `${where}: ${i.path ? `${i.path}: ` : ""}${i.message}`;
}

export function importCommand(deps: ImportCommandDeps): Command {
  const command = new Command("import").description("import another rate limiter's configuration as a policy file");
  command
    .command("envoy")
    .description("print a policy file holding envoyproxy/ratelimit config files as rateLimitService domains (sluice apply -f takes it)")
    .argument("<paths...>", "config files, or directories (RUNTIME_ROOT/RUNTIME_SUBDIRECTORY with config/, or of .yaml files)")
    .option("--into <policy>", "a policy file (e.g. from `sluice export`) to add the domains to; its content is kept")
    .option("--merge-domains", "files naming the same domain add their descriptors to it (their MERGE_DOMAIN_CONFIG)")
    .option("--replace", "replace a domain the --into policy already has")
    .action(async (paths: string[], opts: { into?: string; mergeDomains?: boolean; replace?: boolean }) => {
      const files = await readAll(paths);
      let into: EnvoyConfigFile | undefined;
      if (opts.into !== undefined) {
        if ((await kindOf(opts.into)) !== "file") throw new ImportPathError(`--into ${opts.into}: no such file`);
        into = { name: opts.into, text: await readFile(opts.into, "utf8") };
      }
      const result = importEnvoyConfigs(files, { into, mergeDomains: opts.mergeDomains, replace: opts.replace });
      if (!result.ok) {
        for (const issue of result.issues) deps.warn(`error: ${formatImportIssue(issue)}`);
        deps.warn(`Nothing imported: ${result.issues.length} problem(s).`);
        deps.setExitCode(1);
        return;
      }
      for (const note of result.notes) deps.warn(`note: ${note}`);
      deps.write(result.text);
      deps.warn(`Imported ${result.domains.length} domain(s) from ${files.length} file(s): ${result.domains.join(", ")}.`);
    });
  return command;
}
