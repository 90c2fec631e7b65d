/**
 * `sluice certify [--version N] [--target URL] [--instances N] [--json] [--max-seconds S]`: the
 * acceptance scenarios of a published version (lib/services/certify/run.ts), progress on stderr,
 * the verdict (or the report as JSON) on stdout, the report saved with the version. Exit code 0
 * only when every requirement passed.
 */
import { Command } from "commander";
import type { PrismaClient } from "../../lib/generated/prisma/client";
import { certifyVersion, DEFAULT_CERTIFY_INSTANCES, DEFAULT_CERTIFY_SECONDS } from "../../lib/services/certify/run";
import { formatReportText } from "../../lib/services/certify/report";
import { parseIntOption, parseVersionOption } from "./options";

export interface CertifyCommandDeps {
  database: () => PrismaClient;
  write: (text: string) => void;
  progress: (line: string) => void;
  /** The service token for --target (SLUICE_SERVICE_TOKEN). */
  serviceToken: () => string | undefined;
  /** Sets the process's exit code (1 unless every requirement passed). */
  setExitCode: (code: number) => void;
}

export function certifyCommand(deps: CertifyCommandDeps): Command {
  return new Command("certify")
    .description("run the acceptance scenarios of a published version against decision servers; the report is saved with the version; exit 0 only when every requirement passes")
    .option("--version <n>", "the published version (default: the live one)", parseVersionOption("--version"))
    .option("--target <url>", "a decision server to certify (default: ephemeral ones on a redis-server of their own)")
    .option("--instances <n>", "ephemeral decision servers sharing one Redis", parseIntOption("--instances", 1, 8), DEFAULT_CERTIFY_INSTANCES)
    .option("--max-seconds <s>", "time budget; what is left after it is reported not verified", parseIntOption("--max-seconds", 10, 3_600), DEFAULT_CERTIFY_SECONDS)
    .option("--json", "print the report as JSON instead of the verdict")
    .action(async (opts: { version?: number; target?: string; instances: number; maxSeconds: number; json?: boolean }) => {
      if (opts.target !== undefined && !/^https?:\/\/[^\s]+$/.test(opts.target)) throw new Error(`--target: expected an http(s) URL, got ${JSON.stringify(opts.target)}`);
      const { id, report } = await certifyVersion(deps.database(), {
        version: opts.version,
        target: opts.target ?? null,
        targetToken: deps.serviceToken() ?? null,
        instances: opts.instances,
        maxSeconds: opts.maxSeconds,
        progress: deps.progress,
      });
      deps.write(opts.json ? `${JSON.stringify({ id, ...report }, null, 2)}\n` : `${formatReportText(report)}Report ${id} (shown with v${report.version} in the control plane: /certify/${id}).\n`);
      deps.setExitCode(report.passed ? 0 : 1);
    });
}
