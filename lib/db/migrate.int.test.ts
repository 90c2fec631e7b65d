import { cp, mkdtemp, readFile, rm, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, afterEach, describe, expect, inject, it } from "vitest";
import { freshDatabase, testDatabaseUrl, testRedisPrefix, type FreshDatabase } from "@/test/helpers";
import { MIGRATIONS_DIR, MigrationError, migrate, migrationChecksum, readMigrations } from "./migrate";

const opened: FreshDatabase[] = [];
const tempDirs: string[] = [];

async function newDatabase(): Promise<FreshDatabase> {
  const db = await freshDatabase({ migrate: false });
  opened.push(db);
  return db;
}

/** A private copy of prisma/migrations that a test may edit. */
async function copyOfMigrations(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "sluice-migrations-"));
  tempDirs.push(dir);
  await cp(MIGRATIONS_DIR, dir, { recursive: true });
  return dir;
}

async function addMigration(dir: string, name: string, sql: string): Promise<void> {
  await mkdir(path.join(dir, name), { recursive: true });
  await writeFile(path.join(dir, name, "migration.sql"), sql);
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

interface HistoryRow {
  id: string;
  checksum: string;
  finished_at: Date | null;
  migration_name: string;
  logs: string | null;
  rolled_back_at: Date | null;
  started_at: Date;
  applied_steps_count: number;
}

const history = (url: string) =>
  query<HistoryRow>(url, `SELECT * FROM "_prisma_migrations" ORDER BY migration_name`);

afterEach(async () => {
  await Promise.all(tempDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

afterAll(async () => {
  await Promise.all(opened.map((db) => db.drop()));
});

describe("migrate", () => {
  it("the run's own database is isolated, migrated, and announced to workers through env and inject", async () => {
    const url = testDatabaseUrl();
    expect(new URL(url).pathname).toMatch(/^\/sluice_test_\d{13}_[0-9a-f]{8}$/);
    // Code under test reads process.env (lib/db/client.ts, lib/redis/keys.ts): it must see this run's values.
    expect(process.env.DATABASE_URL).toBe(url);
    expect(inject("sluiceDatabaseUrl")).toBe(url);
    expect(testRedisPrefix()).toMatch(/^t[0-9a-f]{8}:$/);
    expect(process.env.SLUICE_REDIS_PREFIX).toBe(testRedisPrefix());
    expect(inject("sluiceRedisPrefix")).toBe(testRedisPrefix());
    expect(process.env.REDIS_URL).toBe(inject("sluiceRedisUrl"));
    const rows = await history(url);
    const folders = await readMigrations();
    expect(rows.map((r) => r.migration_name)).toEqual(folders.map((m) => m.name));
  });

  it("applies every migration to an empty database, then nothing on a second run", async () => {
    const db = await newDatabase();
    const folders = await readMigrations();
    expect(folders.length).toBeGreaterThan(0);

    const first = await migrate(db.url);
    expect(first.applied).toEqual(folders.map((m) => m.name));
    const tables = await query<{ table_name: string }>(
      db.url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
    );
    expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(["_prisma_migrations", "Tenant", "Limit"]));

    const second = await migrate(db.url);
    expect(second.applied).toEqual([]);
    expect(await history(db.url)).toHaveLength(folders.length);
  });

  it("records each migration as Prisma does: sha256 of the file, finished, one step, not rolled back", async () => {
    const db = await newDatabase();
    const before = new Date();
    await migrate(db.url);
    const rows = await history(db.url);
    const folders = await readMigrations();
    expect(rows).toHaveLength(folders.length);
    for (const [i, row] of rows.entries()) {
      const file = await readFile(path.join(MIGRATIONS_DIR, row.migration_name, "migration.sql"));
      expect(row.migration_name).toBe(folders[i]?.name);
      expect(row.checksum).toBe(migrationChecksum(file));
      expect(row.checksum).toMatch(/^[0-9a-f]{64}$/);
      expect(row.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(row.applied_steps_count).toBe(1);
      expect(row.rolled_back_at).toBeNull();
      expect(row.logs).toBeNull();
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(row.finished_at!.getTime()).toBeGreaterThanOrEqual(row.started_at.getTime());
      expect(row.started_at.getTime()).toBeGreaterThanOrEqual(before.getTime() - 5_000);
    }
    // The history table has exactly Prisma's columns and types, so `prisma migrate` can read it.
    const columns = await query<{ column_name: string; data_type: string; is_nullable: string }>(
      db.url,
      `SELECT column_name, data_type, is_nullable FROM information_schema.columns
       WHERE table_name = '_prisma_migrations' ORDER BY ordinal_position`,
    );
    expect(columns).toEqual([
      { column_name: "id", data_type: "character varying", is_nullable: "NO" },
      { column_name: "checksum", data_type: "character varying", is_nullable: "NO" },
      { column_name: "finished_at", data_type: "timestamp with time zone", is_nullable: "YES" },
      { column_name: "migration_name", data_type: "character varying", is_nullable: "NO" },
      { column_name: "logs", data_type: "text", is_nullable: "YES" },
      { column_name: "rolled_back_at", data_type: "timestamp with time zone", is_nullable: "YES" },
      { column_name: "started_at", data_type: "timestamp with time zone", is_nullable: "NO" },
      { column_name: "applied_steps_count", data_type: "integer", is_nullable: "NO" },
    ]);
  });

  it("refuses, applying nothing, when an applied migration's file was changed afterwards", async () => {
    const db = await newDatabase();
    const dir = await copyOfMigrations();
    await migrate(db.url, { migrationsDir: dir });
    const [first] = await readMigrations(dir);
    const file = path.join(dir, first!.name, "migration.sql");
    await writeFile(file, `${await readFile(file, "utf8")}\n-- an innocent-looking edit\n`);
    await addMigration(dir, "99990101000000_later", `CREATE TABLE "ShouldNotExist" ("id" TEXT NOT NULL);`);

    const attempt = migrate(db.url, { migrationsDir: dir });
    await expect(attempt).rejects.toBeInstanceOf(MigrationError);
    await expect(attempt).rejects.toThrow(new RegExp(`${first!.name} was modified after it was applied`));
    const tables = await query(db.url, "SELECT 1 FROM information_schema.tables WHERE table_name = 'ShouldNotExist'");
    expect(tables).toEqual([]);
  });

  it("accepts a file whose line endings git converted (LF ↔ CRLF), as Prisma does", async () => {
    const db = await newDatabase();
    const dir = await copyOfMigrations();
    await migrate(db.url, { migrationsDir: dir });
    for (const m of await readMigrations(dir)) {
      await writeFile(path.join(dir, m.name, "migration.sql"), m.sql.replace(/\r?\n/g, "\r\n"));
    }
    await expect(migrate(db.url, { migrationsDir: dir })).resolves.toEqual({ applied: [] });
  });

  it("applies a migration added later, and only that one", async () => {
    const db = await newDatabase();
    const dir = await copyOfMigrations();
    await migrate(db.url, { migrationsDir: dir });
    await addMigration(dir, "99990101000000_add_note", `ALTER TABLE "Tier" ADD COLUMN "note" TEXT;`);
    expect(await migrate(db.url, { migrationsDir: dir })).toEqual({ applied: ["99990101000000_add_note"] });
    const cols = await query(db.url, `SELECT 1 FROM information_schema.columns WHERE table_name = 'Tier' AND column_name = 'note'`);
    expect(cols).toHaveLength(1);
  });

  it("refuses a database newer than the code, applying nothing, and ignores a newer migration marked rolled back", async () => {
    const db = await newDatabase();
    const newer = await copyOfMigrations();
    await addMigration(newer, "99990101000000_newer", `ALTER TABLE "Tier" ADD COLUMN "newer" TEXT;`);
    await migrate(db.url, { migrationsDir: newer });
    // The older release: without the newer migration, but with one of its own not applied yet.
    const older = await copyOfMigrations();
    await addMigration(older, "99980101000000_pending", `ALTER TABLE "Tier" ADD COLUMN "pending" TEXT;`);

    await expect(migrate(db.url, { migrationsDir: older })).rejects.toThrow(
      new MigrationError(
        "The database is newer than this code: 99990101000000_newer is applied but not in this release's prisma/migrations. " +
          "Nothing was applied. Run the release that added it, or a newer one.",
      ),
    );
    expect(await query(db.url, `SELECT 1 FROM information_schema.columns WHERE table_name = 'Tier' AND column_name = 'pending'`)).toEqual([]);
    expect((await history(db.url)).map((r) => r.migration_name)).not.toContain("99980101000000_pending");

    // `prisma migrate resolve --rolled-back` marks it undone: then it is history, not a newer schema.
    await query(db.url, `UPDATE "_prisma_migrations" SET rolled_back_at = now() WHERE migration_name = '99990101000000_newer'`);
    expect(await migrate(db.url, { migrationsDir: older })).toEqual({ applied: ["99980101000000_pending"] });
  });

  it("rolls a failing migration back entirely and names it; fixing the file then applies it", async () => {
    const db = await newDatabase();
    const dir = await copyOfMigrations();
    await migrate(db.url, { migrationsDir: dir });
    const name = "99990101000000_broken";
    await addMigration(dir, name, `CREATE TABLE "HalfDone" ("id" TEXT NOT NULL);\nSELECT 1 / 0;\n`);

    await expect(migrate(db.url, { migrationsDir: dir })).rejects.toThrow(`Migration ${name} failed and was rolled back: division by zero`);
    expect(await query(db.url, "SELECT 1 FROM information_schema.tables WHERE table_name = 'HalfDone'")).toEqual([]);
    expect((await history(db.url)).map((r) => r.migration_name)).not.toContain(name);

    await addMigration(dir, name, `CREATE TABLE "HalfDone" ("id" TEXT NOT NULL);\n`);
    expect(await migrate(db.url, { migrationsDir: dir })).toEqual({ applied: [name] });
  });

  it("refuses while a migration is recorded as failed by Prisma (finished_at null)", async () => {
    const db = await newDatabase();
    await migrate(db.url);
    await query(
      db.url,
      `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, applied_steps_count)
       VALUES ('00000000-0000-4000-8000-000000000000', '${"0".repeat(64)}', '99990101000000_crashed', 0)`,
    );
    await expect(migrate(db.url)).rejects.toThrow(/99990101000000_crashed started but never finished/);
  });

  it("is safe to run concurrently: several migrators apply each migration exactly once", async () => {
    const db = await newDatabase();
    const results = await Promise.all([migrate(db.url), migrate(db.url), migrate(db.url)]);
    const folders = await readMigrations();
    expect(results.flatMap((r) => r.applied).sort()).toEqual(folders.map((m) => m.name).sort());
    expect(await history(db.url)).toHaveLength(folders.length);
  });
});
