/**
 * `sluice migrate [--check]`: applies the pending migrations of prisma/migrations to DATABASE_URL
 * (lib/db/migrate.ts), once per release, before that release's processes start
 * (docs/production.md "Migrations"). It refuses, applying nothing and exiting 1 with the reason,
 * a database newer than this release (one that records a migration this code does not have), a
 * migration file changed after it was applied, and a migration recorded as failed. Safe to run
 * from several places at once: the runners queue on Prisma's advisory lock.
 *
 * `--check` applies nothing and exits 0 only when the database is exactly this release's schema:
 * what a process waits on before it starts (the Kubernetes manifests' init containers).
 */
import { Command } from "commander";
import { migrate, pendingMigrations } from "../../lib/db/migrate";

/** What a migration run prints: each migration applied, or that there was nothing to do. */
export function migrationReport(applied: readonly string[]): string {
  if (applied.length === 0) return "Database is up to date; no migration applied.\n";
  return `${applied.map((name) => `Applied ${name}\n`).join("")}${applied.length} migration(s) applied.\n`;
}

export function migrateCommand(deps: { databaseUrl: () => string; write: (text: string) => void; setExitCode: (code: number) => void }): Command {
  return new Command("migrate")
    .description("apply the pending database migrations to DATABASE_URL; refuses a database newer than this release")
    .option("--check", "apply nothing; exit 0 only when the database is up to date with this release")
    .action(async (opts: { check?: boolean }) => {
      if (!opts.check) {
        const { applied } = await migrate(deps.databaseUrl());
        deps.write(migrationReport(applied));
        return;
      }
      const pending = await pendingMigrations(deps.databaseUrl());
      if (pending.length === 0) {
        deps.write("Database is up to date with this release.\n");
        return;
      }
      deps.write(`${pending.length} migration(s) pending: ${pending.join(", ")}. Run \`sluice migrate\`.\n`);
      deps.setExitCode(1);
    });
}
