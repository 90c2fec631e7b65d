/**
 * `sluice nfr [--version N] [--format markdown|csv|json]`: the published policy as a table of
 * non-functional requirements (lib/services/justify/nfr.ts), on stdout.
 */
import { Command, Option } from "commander";
import type { PrismaClient } from "../../lib/generated/prisma/client";
import { NFR_FORMATS, nfrDocument, type NfrFormat } from "../../lib/services/justify/nfr";
import { readPublishedVersion } from "../../lib/services/policy/published-version";
import { parseVersionOption } from "./options";

export function nfrCommand(deps: { database: () => PrismaClient; write: (text: string) => void }): Command {
  return new Command("nfr")
    .description("print a published policy as non-functional requirements, per tier × operation × scope")
    .option("--version <n>", "the published version (default: the live one)", parseVersionOption("--version"))
    .addOption(new Option("--format <format>", "output format").choices([...NFR_FORMATS]).default("markdown"))
    .action(async (opts: { version?: number; format: NfrFormat }) => {
      const doc = await readPublishedVersion(deps.database(), opts.version);
      deps.write(await nfrDocument(doc, opts.format));
    });
}
