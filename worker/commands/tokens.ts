/**
 * `sluice tokens create | list | revoke`: service tokens (decision API), admin tokens (admin API)
 * and tenant read tokens (`--kind tenant --tenant SLUG`: one tenant's usage, never a decision).
 * A token is printed once at creation; afterwards it is known by its display prefix.
 */
import { Command, Option } from "commander";
import type { PrismaClient } from "../../lib/generated/prisma/client";
import { currentEnv } from "../../lib/env";
import { ROLES } from "../../lib/policy/types";
import type { RedisClient } from "../../lib/redis/client";
import { createApiToken } from "../../lib/services/access/create-api-token";
import { revokeApiToken } from "../../lib/services/access/revoke-api-token";

export function tokensCommand(deps: { database: () => PrismaClient; redis: () => RedisClient | null; actor: () => string; write: (text: string) => void }): Command {
  const out = (line: string) => deps.write(`${line}\n`);
  const tokens = new Command("tokens").description("service tokens (decision API), admin tokens (admin API), tenant read tokens (one tenant's usage)");

  tokens
    .command("create")
    .description("create a token and print it once")
    .addOption(new Option("--kind <kind>", "service, admin or tenant").choices(["service", "admin", "tenant"]).makeOptionMandatory())
    .option("--tenant <slug>", "the tenant a tenant token reads (required with --kind tenant)")
    .option("--name <name>", "a name to recognise it by")
    .addOption(new Option("--role <role>", "role of an admin token (default admin; only with --kind admin)").choices([...ROLES]))
    .action(async (opts: { kind: string; tenant?: string; name?: string; role?: string }) => {
      const t = await createApiToken({ db: deps.database(), redis: deps.redis() }, opts, deps.actor());
      const what = t.kind === "admin" ? ` (role ${t.role})` : t.kind === "tenant" ? ` for tenant ${t.tenant}` : "";
      out(`Created ${t.kind} token ${t.name}${what}, prefix ${t.prefix}. Shown once, store it now:`);
      out(t.token);
      if (t.kind !== "admin" && !currentEnv("REDIS_URL") && !currentEnv("REDIS_CLUSTER_NODES")) {
        out("REDIS_URL is not set: the decision server accepts the token after the next publish.");
      }
    });

  tokens
    .command("list")
    .description("list tokens by display prefix (never the token)")
    .addOption(new Option("--kind <kind>", "only this kind").choices(["service", "admin", "tenant"]))
    .action(async (opts: { kind?: "service" | "admin" | "tenant" }) => {
      const rows = await deps.database().apiToken.findMany({ where: opts.kind ? { kind: opts.kind } : {}, orderBy: [{ kind: "asc" }, { createdAt: "asc" }] });
      if (rows.length === 0) out("No tokens.");
      for (const r of rows) {
        const what = r.kind === "admin" ? `role ${r.role}` : r.kind === "tenant" ? `tenant ${r.tenant}` : "decision API";
        out(`${r.prefix}…  ${r.kind}  ${r.name}  ${what}  created ${r.createdAt.toISOString()}${r.revokedAt ? `  revoked ${r.revokedAt.toISOString()}` : ""}`);
      }
    });

  tokens
    .command("revoke")
    .description("revoke a token by its display prefix (effective at once)")
    .requiredOption("--prefix <prefix>", "the token's display prefix, as `tokens list` shows it")
    .action(async (opts: { prefix: string }) => {
      const rows = await deps.database().apiToken.findMany({ where: { prefix: opts.prefix }, select: { id: true } });
      if (rows.length !== 1) throw new Error(rows.length === 0 ? `--prefix: no token ${opts.prefix}` : `--prefix: ${rows.length} tokens share ${opts.prefix}`);
      const r = await revokeApiToken({ db: deps.database(), redis: deps.redis() }, { id: rows[0]!.id }, deps.actor());
      out(r.alreadyRevoked ? `Token ${opts.prefix} was already revoked.` : `Revoked token ${opts.prefix}.`);
    });
  return tokens;
}
