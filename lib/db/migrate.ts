/**
 * Applies prisma/migrations/<name>/migration.sql in order and records each in Prisma's own
 * `_prisma_migrations` table, exactly as `prisma migrate deploy` would.
 *
 * Why not `prisma migrate deploy`: it needs Prisma's native schema engine, which no npm package
 * ships and which cannot be downloaded on these machines. This runner keeps the same on-disk layout,
 * the same history table, the same checksums (sha256 hex of the file) and the same advisory lock,
 * so a machine that does have the engine sees these migrations as applied and agrees with them.
 */
import { createHash, randomUUID } from "node:crypto";
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { z } from "zod";

/** Where the migrations live: prisma/migrations beside prisma/schema.prisma. */
export const MIGRATIONS_DIR = fileURLToPath(new URL("../../prisma/migrations", import.meta.url));

/**
 * The key Prisma's schema engine passes to pg_advisory_lock; using the same one means this runner
 * and a real `prisma migrate deploy` also wait for each other.
 */
const PRISMA_ADVISORY_LOCK_KEY = 72707369;

/** The history table, byte for byte what Prisma's PostgreSQL connector creates. */
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    id                      VARCHAR(36) PRIMARY KEY NOT NULL,
    checksum                VARCHAR(64) NOT NULL,
    finished_at             TIMESTAMPTZ,
    migration_name          VARCHAR(255) NOT NULL,
    logs                    TEXT,
    rolled_back_at          TIMESTAMPTZ,
    started_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    applied_steps_count     INTEGER NOT NULL DEFAULT 0
)`;

export interface Migration {
  /** The folder name, e.g. `20261202000000_init`; migrations apply in lexical order of it. */
  name: string;
  sql: string;
  /** sha256 of migration.sql, lowercase hex (64 chars), as Prisma stores it. */
  checksum: string;
}

export interface MigrateOptions {
  /** Defaults to {@link MIGRATIONS_DIR}. */
  migrationsDir?: string;
  /** How long to wait for another migrator holding the advisory lock. Default 60 s. */
  lockTimeoutMs?: number;
  /** TCP connect timeout. Default 10 s. */
  connectTimeoutMs?: number;
}

export interface MigrateResult {
  /** Names of the migrations this call applied, in order (empty when the database was up to date). */
  applied: string[];
}

/** Thrown when the database and prisma/migrations disagree; nothing was applied. */
export class MigrationError extends Error {
  override name = "MigrationError";
}

/** sha256 hex of a migration script, zero-padded, as Prisma's schema engine renders it. */
export function migrationChecksum(sql: string | Buffer): string {
  return createHash("sha256").update(sql).digest("hex");
}

/**
 * Whether a script matches a recorded checksum, with Prisma's tolerances: line endings may have
 * been converted by git (LF ↔ CRLF), and very old Prisma versions stored hex without zero padding.
 */
export function scriptMatchesChecksum(sql: string, checksum: string): boolean {
  const candidates = [sql, sql.replace(/\r\n/g, "\n"), sql.replace(/\r?\n/g, "\r\n")];
  return candidates.some((script) => {
    const digest = createHash("sha256").update(script).digest();
    const rendered =
      checksum.length !== 0 && checksum.length !== 64
        ? Array.from(digest, (byte) => byte.toString(16)).join("")
        : digest.toString("hex");
    return rendered === checksum;
  });
}

/** Reads every `<dir>/<name>/migration.sql`, sorted by name (Prisma's order). */
export async function readMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  const migrations: Migration[] = [];
  for (const name of names) {
    const file = path.join(dir, name, "migration.sql");
    const exists = await stat(file).then(
      (s) => s.isFile(),
      () => false,
    );
    // Prisma ignores folders without a migration.sql (e.g. a half-created one); so do we.
    if (!exists) continue;
    const bytes = await readFile(file);
    migrations.push({ name, sql: bytes.toString("utf8"), checksum: migrationChecksum(bytes) });
  }
  return migrations;
}

const historyRow = z.object({
  migration_name: z.string(),
  checksum: z.string(),
  finished_at: z.date().nullable(),
  rolled_back_at: z.date().nullable(),
});

/**
 * Brings the database at `connectionString` up to date with prisma/migrations.
 *
 * - Each pending migration runs in its own transaction together with its history row, so a failure
 *   leaves neither half-applied DDL nor a row behind, and the error names the migration.
 * - Refuses (throws {@link MigrationError}, applying nothing) when an applied migration's file has
 *   changed since, when a migration is recorded as failed (Prisma's P3009 situation), and when the
 *   database is newer than this code: it records an applied migration that prisma/migrations does
 *   not have (a release rolled back after a newer one migrated). `prisma migrate deploy` would go
 *   on; this runner stops, because code that predates the schema it finds may write rows the
 *   newer code cannot read, and nothing here can tell whether the extra migration was harmless.
 * - Like `prisma migrate deploy`, applies every unapplied folder in name order, and ignores rows
 *   marked rolled back.
 * - Safe to run concurrently: callers serialize on Prisma's advisory lock, and the second one finds
 *   nothing left to apply.
 */
export async function migrate(connectionString: string, options: MigrateOptions = {}): Promise<MigrateResult> {
  const migrations = await readMigrations(options.migrationsDir ?? MIGRATIONS_DIR);
  const client = await connect(connectionString, options);
  try {
    await acquireLock(client, options.lockTimeoutMs ?? 60_000);
    try {
      // Keep NOTICEs such as "relation already exists, skipping" out of the way.
      await client.query("SET client_min_messages = warning");
      await client.query(CREATE_MIGRATIONS_TABLE);
      const pending = planPending(migrations, await readHistory(client));
      const applied: string[] = [];
      for (const migration of pending) {
        await applyOne(client, migration);
        applied.push(migration.name);
      }
      return { applied };
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [PRISMA_ADVISORY_LOCK_KEY]).catch(() => undefined);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * What {@link migrate} would apply, without applying or creating anything: the names of the pending
 * migrations (empty when the database is up to date). Throws {@link MigrationError} where migrate
 * would refuse. For whatever must wait until a release's migrations have run (`sluice migrate --check`).
 */
export async function pendingMigrations(connectionString: string, options: Omit<MigrateOptions, "lockTimeoutMs"> = {}): Promise<string[]> {
  const migrations = await readMigrations(options.migrationsDir ?? MIGRATIONS_DIR);
  const client = await connect(connectionString, options);
  try {
    const { rows } = await client.query(`SELECT to_regclass('"_prisma_migrations"') IS NOT NULL AS present`);
    const history = z.object({ present: z.boolean() }).parse(rows[0]).present ? await readHistory(client) : [];
    return planPending(migrations, history).map((m) => m.name);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function connect(connectionString: string, options: Pick<MigrateOptions, "connectTimeoutMs">): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    application_name: "sluice-migrate",
  });
  await client.connect();
  // An idle connection error after a failure must not crash the process; the awaited calls report it.
  client.on("error", () => undefined);
  return client;
}

async function readHistory(client: pg.Client): Promise<z.infer<typeof historyRow>[]> {
  const { rows } = await client.query(
    `SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" ORDER BY started_at`,
  );
  return z.array(historyRow).parse(rows);
}

async function acquireLock(client: pg.Client, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await client.query("SELECT pg_try_advisory_lock($1) AS locked", [PRISMA_ADVISORY_LOCK_KEY]);
    if (z.object({ locked: z.boolean() }).parse(rows[0]).locked) return;
    if (Date.now() >= deadline) {
      throw new MigrationError(
        `Timed out after ${timeoutMs} ms waiting for the migration lock (pg_advisory_lock ${PRISMA_ADVISORY_LOCK_KEY}); is another migration running?`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Decides what to apply, or refuses with the reason before anything is touched. */
function planPending(migrations: Migration[], history: z.infer<typeof historyRow>[]): Migration[] {
  const live = history.filter((row) => row.rolled_back_at === null);
  const failed = live.filter((row) => row.finished_at === null);
  if (failed.length > 0) {
    const names = failed.map((row) => row.migration_name).join(", ");
    throw new MigrationError(
      `Migration ${names} started but never finished (recorded as failed in _prisma_migrations). ` +
        `Fix the database by hand, then mark it with \`prisma migrate resolve --rolled-back ${failed[0]?.migration_name}\` ` +
        `or delete its row.`,
    );
  }
  const known = new Set(migrations.map((m) => m.name));
  const unknown = live.filter((row) => !known.has(row.migration_name)).map((row) => row.migration_name);
  if (unknown.length > 0) {
    const them = unknown.length === 1 ? "it" : "them";
    throw new MigrationError(
      `The database is newer than this code: ${unknown.join(", ")} ${unknown.length === 1 ? "is" : "are"} applied but not in this ` +
        `release's prisma/migrations. Nothing was applied. Run the release that added ${them}, or a newer one.`,
    );
  }
  const appliedByName = new Map(live.map((row) => [row.migration_name, row]));
  for (const migration of migrations) {
    const row = appliedByName.get(migration.name);
    if (row && !scriptMatchesChecksum(migration.sql, row.checksum)) {
      throw new MigrationError(
        `Migration ${migration.name} was modified after it was applied: recorded checksum ${row.checksum}, ` +
          `file now ${migration.checksum}. Restore the original migration.sql and put the change in a new migration.`,
      );
    }
  }
  return migrations.filter((m) => !appliedByName.has(m.name));
}

async function applyOne(client: pg.Client, migration: Migration): Promise<void> {
  const id = randomUUID();
  await client.query("BEGIN");
  try {
    await client.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count)
       VALUES ($1, $2, $3, now(), 0)`,
      [id, migration.checksum, migration.name],
    );
    // No parameters: the simple query protocol runs the whole multi-statement script.
    await client.query(migration.sql);
    await client.query(
      `UPDATE "_prisma_migrations" SET finished_at = clock_timestamp(), applied_steps_count = 1 WHERE id = $1`,
      [id],
    );
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    const message = error instanceof Error ? error.message : String(error);
    throw new MigrationError(`Migration ${migration.name} failed and was rolled back: ${message}`, { cause: error });
  }
}
