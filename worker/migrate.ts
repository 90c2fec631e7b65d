/**
 * `npm run db:migrate` (development): what `sluice migrate` does (worker/commands/migrate.ts), and
 * with DATABASE_URL unset it migrates the embedded PostgreSQL in .data/pg (what `npm run demo`
 * uses), starting it for the duration. Exit code 0 when the database is up to date afterwards, 1
 * (with the reason) when it refused or failed. Production runs `npx sluice migrate`, which needs
 * DATABASE_URL like every other command of the CLI.
 */
import "dotenv/config";
import { startEmbeddedPostgres } from "../lib/db/embedded";
import { migrate } from "../lib/db/migrate";
import { currentEnv } from "../lib/env";
import { migrationReport } from "./commands/migrate";

async function main(): Promise<void> {
  const configured = currentEnv("DATABASE_URL");
  let url: string;
  let stop = async (): Promise<void> => undefined;
  if (configured === undefined) {
    const embedded = await startEmbeddedPostgres({ dataDir: ".data/pg" });
    url = embedded.url;
    stop = embedded.stop;
    console.log(`DATABASE_URL is unset: using the embedded PostgreSQL in .data/pg (port ${embedded.port}).`);
  } else {
    url = configured;
  }
  try {
    const { applied } = await migrate(url);
    process.stdout.write(migrationReport(applied));
  } finally {
    await stop();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
