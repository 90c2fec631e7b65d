/**
 * `npm run db:migrate`: applies prisma/migrations to DATABASE_URL and says what it did.
 * Exit code 0 when the database is up to date afterwards, 1 (with the reason) when it refused.
 */
import "dotenv/config";
import { z } from "zod";
import { migrate } from "../lib/db/migrate";

async function main(): Promise<void> {
  const parsed = z.string().url().safeParse(process.env.DATABASE_URL);
  if (!parsed.success) {
    throw new Error("DATABASE_URL is not set or not a URL (e.g. postgresql://postgres@127.0.0.1:5432/sluice)");
  }
  const { applied } = await migrate(parsed.data);
  if (applied.length === 0) {
    console.log("Database is up to date; no migration applied.");
    return;
  }
  for (const name of applied) console.log(`Applied ${name}`);
  console.log(`${applied.length} migration(s) applied.`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
