/** Drops the e2e database and deletes this run's Redis keys (by prefix, never FLUSHALL). */
import pg from "pg";
import { E2E } from "../playwright.config";
import { deleteRedisKeys } from "../test/global-setup";

export default async function globalTeardown(): Promise<void> {
  const name = new URL(E2E.databaseUrl).pathname.slice(1);
  if (process.env.SLUICE_E2E_KEEP === "1") return;
  const admin = new pg.Client({ connectionString: E2E.baseDatabaseUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
  await deleteRedisKeys(E2E.redisUrl, E2E.redisPrefix).catch(() => undefined);
}
