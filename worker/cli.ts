#!/usr/bin/env node
/**
 * The `sluice` CLI (`npm run sluice -- <command>`; compiled by `npm run build`, the package's bin:
 * `npx sluice <command>`): policy as code for platform engineers and CI, and `sluice migrate`.
 * A thin adapter over lib/services: parse arguments, call one use case, print the result. Errors
 * print as one clean message (and every policy issue with its path), never a stack; exit code 1.
 * Audit entries name the actor `cli:<os user>`. Needs DATABASE_URL; publish, rollback, keys and
 * service tokens also write Redis (REDIS_URL or REDIS_CLUSTER_NODES), except in single-node mode
 * (SLUICE_MODE=single-node), where Postgres alone is written. `versions` lists published versions.
 * `import envoy` reads files and prints a policy file: it needs neither database nor Redis.
 */
import "dotenv/config";
import { realpathSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import path from "node:path";
import { Command, CommanderError, Option } from "commander";
import { createDb } from "../lib/db/client";
import { currentEnv, sluiceMode } from "../lib/env";
import { createLogger } from "../lib/log";
import type { PrismaClient } from "../lib/generated/prisma/client";
import { formatIssue } from "../lib/policy/policy-file";
import { ROLES } from "../lib/policy/types";
import { createRedisClient, type RedisClient } from "../lib/redis/client";
import { applyPolicyFile } from "../lib/services/policy/apply-policy-file";
import { formatPlan } from "./format-plan";
import { loadDemoEnv } from "./support/demo-env";
import { createApiKey } from "../lib/services/access/create-api-key";
import { createUser } from "../lib/services/access/create-user";
import { unlockLogin } from "../lib/auth/login";
import { ServiceError } from "../lib/services/errors";
import { exportPolicyFile } from "../lib/services/policy/export-policy-file";
import { billingExportQuerySchema, exportBilling } from "../lib/services/billing/billing-export";
import { BILLING_FORMATS } from "../lib/services/billing/billing-format";
import { writeFile } from "node:fs/promises";
import { publishPolicy } from "../lib/services/policy/publish-policy";
import { revokeApiKey } from "../lib/services/access/revoke-api-key";
import { rollbackPolicy } from "../lib/services/policy/rollback-policy";
import { certifyCommand } from "./commands/certify";
import { importCommand, ImportPathError } from "./commands/import-envoy";
import { migrateCommand } from "./commands/migrate";
import { nfrCommand } from "./commands/nfr";
import { openapiCommand } from "./commands/openapi";
import { notificationsCommand, webhooksCommand } from "./commands/notifications";
import { portalLinkCommand } from "./commands/portal-link";
import { tenantsCommand } from "./commands/tenants";
import { tokensCommand } from "./commands/tokens";
import { closeRegionClients } from "../lib/redis/regions";
import { publishRollout, rolloutCommand, wantsRollout, type PublishRolloutOptions } from "./commands/rollout";
import { approvalsCommand } from "./commands/approvals";
import { formatApprovalPending } from "../lib/services/approval/approval-view";

/** Diagnostics only, on stderr (stdout is the commands' output, e.g. an export); what users read is `out` and `report`. */
const logger = createLogger("cli", { destination: process.stderr });

/** A failure to report as a plain message (no stack). */
class CliError extends Error {}

function actor(): string {
  let name = currentEnv("USER") ?? "unknown";
  try {
    name = userInfo().username;
  } catch {
    // No passwd entry (some containers): fall back to $USER.
  }
  return `cli:${name}`;
}

/** The CLI edits the policy as admin: whoever runs it holds the database's credentials. */
function editor(): { actor: string; role: "admin" } {
  return { actor: actor(), role: "admin" };
}

const opened: { db?: PrismaClient; redis?: RedisClient } = {};

function databaseUrl(): string {
  const url = currentEnv("DATABASE_URL");
  if (!url) throw new CliError("DATABASE_URL is not set (e.g. postgresql://postgres@127.0.0.1:5432/sluice; while `npm run demo` runs, sluice finds its database by itself)");
  return url;
}

function database(): PrismaClient {
  opened.db ??= createDb(databaseUrl());
  return opened.db;
}

function redisClient(required: boolean): RedisClient | null {
  // Single-node mode has no Redis: the services write Postgres only, which its decision server polls.
  if (sluiceMode() === "single-node") return null;
  const url = currentEnv("REDIS_URL");
  const clusterNodes = currentEnv("REDIS_CLUSTER_NODES");
  if (!url && !clusterNodes) {
    if (required) throw new CliError("REDIS_URL is not set (e.g. redis://127.0.0.1:6379)");
    return null;
  }
  opened.redis ??= createRedisClient({ url, clusterNodes, commandTimeoutMs: 5_000, name: "sluice-cli" });
  return opened.redis;
}

async function closeAll(): Promise<void> {
  await opened.db?.$disconnect().catch(() => undefined);
  opened.redis?.disconnect();
  await closeRegionClients();
}

/** A publish or rollback that some regions missed (SLUICE_REGIONS): which, and what happens next. */
const missedRegionsLine = (regions: string[]) =>
  `Warning: region(s) ${regions.join(", ")} could not be reached; they keep their last good version until the worker catches them up (docs/regions.md).`;

const out = (text: string) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);

export function buildProgram(): Command {
  const program = new Command("sluice")
    .description("Sluice: rate-limit policy as code")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride();

  program
    .command("apply")
    .description("apply a policy file (YAML or JSON) to the draft in one transaction; prints the plan")
    .requiredOption("-f, --file <path>", "policy file, or - for stdin")
    .option("--dry-run", "print the plan (created, changed, deleted) and write nothing")
    .action(async (opts: { file: string; dryRun?: boolean }) => {
      const text = opts.file === "-" ? await readStdin() : await readFile(opts.file, "utf8").catch((e: NodeJS.ErrnoException) => {
        throw new CliError(`cannot read ${opts.file}: ${e.code === "ENOENT" ? "no such file" : e.message}`);
      });
      const result = await applyPolicyFile(database(), text, { actor: actor(), dryRun: opts.dryRun });
      out(formatPlan(result.plan));
      if (result.dryRun) out("Dry run: nothing was written.");
      else if (result.applied) out("Applied. Run `sluice publish` to make it live.");
      for (const k of result.generatedKeys) out(`New key for ${k.tenant}/${k.name} (shown once): ${k.key}`);
    });

  program
    .command("export")
    .description("print the draft policy as a policy file (YAML, no secrets)")
    .action(async () => {
      out(await exportPolicyFile(database()));
    });

  const rolloutDeps = { database, redis: () => redisClient(true), actor, write: (text: string) => process.stdout.write(text) };
  program
    .command("publish")
    .description("compile the draft, validate it, and make it the live version (or roll it out: --canary/--steps, --rollout)")
    .option("--note <text>", "a note stored with the version")
    .option("--canary <slugs>", "roll out to these tenants first (comma-separated), then --steps")
    .option("--canary-bake <duration>", "how long the canaries alone run (default 15m)")
    .option("--steps <steps>", "the rollout's steps: <percent>%[:<bake time>], ending at 100%, e.g. 10%:1h,100%")
    .option("--rollout <file>", "the rollout as a YAML or JSON file (canaries, canaryBake, steps, guardrails)")
    .action(async (opts: PublishRolloutOptions) => {
      if (wantsRollout(opts)) return publishRollout(rolloutDeps, opts);
      const r = await publishPolicy({ db: database(), redis: redisClient(true) }, { ...editor(), note: opts.note });
      if (r.approval) out(formatApprovalPending(r.approval));
      else if (r.status === "unchanged") out(`Policy unchanged: v${r.version} is live (checksum ${r.checksum.slice(0, 12)}).`);
      else out(`Published v${r.version} (checksum ${r.checksum.slice(0, 12)})${r.previousVersion ? `, replacing v${r.previousVersion}` : ""}.`);
      if (r.regionsMissed) out(missedRegionsLine(r.regionsMissed));
    });

  program
    .command("rollback")
    .description("republish an earlier version as a new version and reset the draft to it")
    .requiredOption("--to <version>", "the version to restore", parseVersion)
    .action(async (opts: { to: number }) => {
      const r = await rollbackPolicy({ db: database(), redis: redisClient(true) }, { actor: actor(), toVersion: opts.to });
      out(`Rolled back: v${r.version} is live with the document of v${opts.to}.`);
      out(r.draftReset === null ? `Warning: ${r.draftNote}.` : `The draft was reset to it (${r.pendingDiscarded} unpublished change(s) discarded).`);
      if (r.regionsMissed) out(missedRegionsLine(r.regionsMissed));
    });

  program
    .command("versions")
    .description("list published versions, newest first (for rollback --to)")
    .option("--limit <n>", "how many", (v) => Math.min(Math.max(Number.parseInt(v, 10) || 20, 1), 1000), 20)
    .action(async (opts: { limit: number }) => {
      const rows = await database().policyVersion.findMany({
        orderBy: { version: "desc" },
        take: opts.limit,
        select: { version: true, checksum: true, author: true, createdAt: true, note: true, rolledBackFrom: true },
      });
      if (rows.length === 0) out("No version published yet.");
      for (const r of rows) {
        const extra = r.rolledBackFrom ? ` (rollback to v${r.rolledBackFrom})` : r.note ? ` — ${r.note}` : "";
        out(`v${r.version}  ${r.createdAt.toISOString()}  ${r.checksum.slice(0, 12)}  ${r.author}${extra}`);
      }
    });

  const keys = program.command("keys").description("end clients' API keys");
  keys
    .command("create")
    .description("create an API key for a tenant and print it once")
    .requiredOption("--tenant <slug>", "tenant slug")
    .option("--name <name>", "key name (unique per tenant)")
    .action(async (opts: { tenant: string; name?: string }) => {
      const redis = redisClient(false);
      const k = await createApiKey({ db: database(), redis }, { tenant: opts.tenant, name: opts.name }, editor());
      out(`Created key ${k.tenant}/${k.name} (prefix ${k.prefix}). Shown once, store it now:`);
      out(k.key);
      if (!redis) out("REDIS_URL is not set: the key works after the next publish.");
    });
  keys
    .command("revoke")
    .description("revoke a tenant's API key (effective immediately)")
    .requiredOption("--tenant <slug>", "tenant slug")
    .addOption(new Option("--name <name>", "key name").conflicts("prefix"))
    .addOption(new Option("--prefix <prefix>", "the key's display prefix").conflicts("name"))
    .action(async (opts: { tenant: string; name?: string; prefix?: string }) => {
      if (!opts.name && !opts.prefix) throw new CliError("give --name or --prefix");
      const k = await revokeApiKey({ db: database(), redis: redisClient(true) }, opts, editor());
      out(k.alreadyRevoked ? `Key ${k.tenant}/${k.name} was already revoked.` : `Revoked key ${k.tenant}/${k.name} (${k.prefix}).`);
    });

  const users = program.command("users").description("control-plane users");
  users
    .command("create")
    .description("create a user (prints a generated password unless --password is given)")
    .requiredOption("--email <email>", "sign-in email")
    .addOption(new Option("--role <role>", "role").choices([...ROLES]).makeOptionMandatory())
    .option("--name <name>", "display name")
    .option("--password <password>", "password (default: generated and printed once)")
    .action(async (opts: { email: string; role: string; name?: string; password?: string }) => {
      const password = opts.password ?? randomBytes(12).toString("base64url");
      const r = await createUser(database(), { email: opts.email, role: opts.role, name: opts.name, password }, actor());
      if (!r.ok) throw new CliError(`${r.field}: ${r.message}`);
      out(`Created user ${r.user.email} (${r.user.role}).`);
      if (!opts.password) out(`Password (shown once): ${password}`);
    });

  users
    .command("unlock")
    .description("clear an account's failed sign-ins, so its owner can sign in again (audited)")
    .requiredOption("--email <email>", "sign-in email")
    .action(async (opts: { email: string }) => {
      const r = await unlockLogin(database(), { email: opts.email }, actor(), Date.now());
      if (!r) throw new CliError(`email: no user ${opts.email}`);
      out(`Unlocked ${r.email} (${r.cleared} failed sign-in${r.cleared === 1 ? "" : "s"} cleared).`);
    });

  const billing = program.command("billing").description("monthly quota usage for billing");
  billing
    .command("export")
    .description("export a month's usage per tenant and quota (same bytes every time for the same data)")
    .requiredOption("--period <YYYY-MM>", "calendar month, UTC")
    .addOption(new Option("--format <format>", "output format").choices([...BILLING_FORMATS]).default("csv"))
    .option("--tenant <slug>", "one tenant's lines only")
    .option("--out <file>", "write to a file instead of stdout")
    .action(async (opts: { period: string; format: string; tenant?: string; out?: string }) => {
      const query = billingExportQuerySchema.safeParse({ period: opts.period, format: opts.format, tenant: opts.tenant });
      if (!query.success) {
        const issue = query.error.issues[0];
        throw new CliError(`--${String(issue.path[0])}: ${issue.message}`);
      }
      const result = await exportBilling(database(), query.data);
      if (opts.out) {
        await writeFile(opts.out, result.body);
        out(`Wrote ${opts.out}: ${result.period} ${result.status} (revision ${result.revision}), sha256 ${result.checksum}`);
      } else {
        process.stdout.write(result.body);
        process.stderr.write(`${result.period} ${result.status} (revision ${result.revision}), sha256 ${result.checksum}\n`);
      }
    });

  program.addCommand(rolloutCommand(rolloutDeps));
  program.addCommand(approvalsCommand(rolloutDeps));
  program.addCommand(tokensCommand({ database, redis: () => redisClient(false), actor, write: (text) => process.stdout.write(text) }));
  program.addCommand(tenantsCommand({ database, editor, write: (text) => process.stdout.write(text) }));
  program.addCommand(webhooksCommand({ database, actor, write: (text) => process.stdout.write(text) }));
  program.addCommand(notificationsCommand({ database, actor, write: (text) => process.stdout.write(text) }));
  program.addCommand(portalLinkCommand({ database, write: (text) => process.stdout.write(text), nowMs: () => Date.now() }));
  program.addCommand(migrateCommand({ databaseUrl, write: (text) => process.stdout.write(text), setExitCode: (code) => (process.exitCode = code) }));
  program.addCommand(nfrCommand({ database, write: (text) => process.stdout.write(text) }));
  program.addCommand(
    importCommand({ write: (text) => process.stdout.write(text), warn: (line) => process.stderr.write(`${line}\n`), setExitCode: (code) => (process.exitCode = code) }),
  );
  program.addCommand(openapiCommand({ database, write: (text) => process.stdout.write(text), progress: (line) => process.stderr.write(`${line}\n`) }));
  program.addCommand(
    certifyCommand({
      database,
      write: (text) => process.stdout.write(text),
      progress: (line) => process.stderr.write(`${line}\n`),
      serviceToken: () => currentEnv("SLUICE_SERVICE_TOKEN") || undefined,
      setExitCode: (code) => (process.exitCode = code),
    }),
  );

  // Commands built in their own modules are added whole; give them, and their own subcommands
  // (`import envoy`), the program's settings (exitOverride, output) as `.command()` does above.
  const inherit = (parent: Command) => {
    for (const cmd of parent.commands) {
      cmd.copyInheritedSettings(parent);
      inherit(cmd);
    }
  };
  inherit(program);

  return program;
}

function parseVersion(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) throw new CliError(`--to: expected a version number ≥ 1, got ${JSON.stringify(value)}`);
  return n;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Prints an error the way a CLI user wants it: the message, and each policy issue with its path. */
function report(error: unknown): void {
  if (error instanceof ServiceError) {
    process.stderr.write(`error: ${error.message}\n`);
    if (error.issues.length > 1) for (const issue of error.issues) process.stderr.write(`  ${formatIssue(issue)}\n`);
  } else if (error instanceof CliError || error instanceof ImportPathError) {
    process.stderr.write(`error: ${error.message}\n`);
  } else if (error instanceof Error) {
    // Infrastructure (database or Redis down, …): the message names it; the stack helps nobody
    // here, except whoever runs with LOG_LEVEL=debug to see the cause.
    process.stderr.write(`error: ${error.message.trim().split("\n").filter(Boolean).slice(-1)[0] ?? error.name}\n`);
    logger.debug({ err: error }, "cause");
  } else {
    process.stderr.write(`error: ${String(error)}\n`);
  }
}

async function main(argv: string[]): Promise<number> {
  // No DATABASE_URL: a running `npm run demo` says where its database is (worker/support/demo-env.ts).
  const demoEnv = loadDemoEnv(path.resolve(currentEnv("SLUICE_DATA_DIR") ?? ".data"));
  if (demoEnv) process.stderr.write(`DATABASE_URL unset: using the running demo's database (${path.relative(process.cwd(), demoEnv) || demoEnv})\n`);
  try {
    await buildProgram().parseAsync(argv);
    // A command whose verdict is a failure (certify) sets the exit code without throwing.
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 1; // commander printed it already
    report(error);
    return 1;
  } finally {
    await closeAll();
  }
}

// Run only as a script (tests import buildProgram without running anything). The path is resolved
// first: the `sluice` bin of an installed package is a symlink to the compiled file (dist/server).
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main(process.argv).then((code) => process.exit(code));
}
