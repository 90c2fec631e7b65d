/**
 * `npm run db:migrate`: applies prisma/migrations to DATABASE_URL and says what it did.
 * With DATABASE_URL unset it migrates the embedded PostgreSQL in .data/pg (what `npm run demo` uses),
 * starting it for the duration. Exit code 0 when the database is up to date afterwards, 1 (with the
 * reason) when it refused or failed.
 */
import "dotenv/config";
import { startEmbeddedPostgres } from "../lib/db/embedded";
import { migrate } from "../lib/db/migrate";
import { currentEnv } from "../lib/env";

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
    if (applied.length === 0) console.log("Database is up to date; no migration applied.");
    for (const name of applied) console.log(`Applied ${name}`);
    if (applied.length > 0) console.log(`${applied.length} migration(s) applied.`);
  } finally {
    await stop();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
