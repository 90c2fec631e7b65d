/**
 * `sluice openapi [--spec FILE] [--format json|yaml] [--version N]`: the operator's OpenAPI
 * document with a published policy's rate limits written into it (lib/openapi/operator.ts), or a
 * new one made from the policy's match patterns; on stdout. How many operations are limited goes
 * to stderr.
 */
import { readFile } from "node:fs/promises";
import { Command, Option } from "commander";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import type { PrismaClient } from "../../lib/generated/prisma/client";
import { assertOpenApi3, documentFromPolicy, mergeRateLimits, SpecError } from "../../lib/openapi/operator";
import { ServiceError } from "../../lib/services/errors";
import { readPublishedVersion } from "../../lib/services/policy/published-version";
import { parseVersionOption } from "./options";

const FORMATS = ["json", "yaml"] as const;

async function readSpec(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ServiceError("invalid_request", `--spec ${file}: ${code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a directory" : "cannot be read"}`, { field: "spec" });
  }
  try {
    // YAML 1.2 reads JSON too.
    return parseYaml(text, { maxAliasCount: 1000 }) as unknown;
  } catch (error) {
    throw new ServiceError("invalid_request", `--spec ${file}: neither YAML nor JSON (${(error as Error).message.split("\n")[0]})`, { field: "spec" });
  }
}

/** A SpecError as the CLI's error naming the file. */
function specErrors<T>(file: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof SpecError) throw new ServiceError("invalid_request", `--spec ${file}: ${error.message}`, { field: "spec" });
    throw error;
  }
}

export function openapiCommand(deps: { database: () => PrismaClient; write: (text: string) => void; progress: (line: string) => void }): Command {
  return new Command("openapi")
    .description("write your OpenAPI document with the live policy's rate limits: 429 (problem+json), RateLimit headers, x-sluice-ratelimit per operation")
    .option("--spec <file>", "your OpenAPI 3.x document (YAML or JSON) to merge into; without it, one is made from the operations' match patterns")
    .addOption(new Option("--format <format>", "output format").choices([...FORMATS]).default("json"))
    .option("--version <n>", "the published version (default: the live one)", parseVersionOption("--version"))
    .action(async (opts: { spec?: string; format: (typeof FORMATS)[number]; version?: number }) => {
      const spec = opts.spec === undefined ? undefined : await readSpec(opts.spec);
      if (spec !== undefined) specErrors(opts.spec!, () => assertOpenApi3(spec));
      const policy = await readPublishedVersion(deps.database(), opts.version);
      let doc: Record<string, unknown>;
      if (spec === undefined) doc = documentFromPolicy(policy);
      else {
        const merged = specErrors(opts.spec!, () => mergeRateLimits(policy, spec));
        doc = merged.doc;
        deps.progress(`policy v${policy.version}: ${merged.limited} operation${merged.limited === 1 ? "" : "s"} limited`);
      }
      deps.write(opts.format === "json" ? `${JSON.stringify(doc, null, 2)}\n` : stringifyYaml(doc, { aliasDuplicateObjects: false, lineWidth: 0 }));
    });
}
