import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "@/test/helpers";
import { readMigrations } from "@/lib/db/migrate";
import { runSluice } from "../testing/sluice-cli";

let fresh: FreshDatabase;
let names: string[];

const sluice = (...args: string[]) => runSluice({ DATABASE_URL: fresh.url }, args);

async function query(sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: fresh.url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  fresh = await freshDatabase({ migrate: false });
  names = (await readMigrations()).map((m) => m.name);
});
afterAll(async () => {
  await fresh?.drop();
});

describe("sluice migrate", () => {
  it("--check on an empty database lists every migration as pending, exits 1, and creates nothing", async () => {
    const run = await sluice("migrate", "--check");
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(`${names.length} migration(s) pending: ${names.join(", ")}. Run \`sluice migrate\`.\n`);
    expect(await query(`SELECT to_regclass('"_prisma_migrations"') AS t`)).toEqual([{ t: null }]);
  });

  it("applies every migration, then nothing; --check then exits 0", async () => {
    const first = await sluice("migrate");
    expect(first).toMatchObject({ code: 0, stderr: "" });
    expect(first.stdout).toBe(`${names.map((n) => `Applied ${n}\n`).join("")}${names.length} migration(s) applied.\n`);
    expect(await sluice("migrate")).toMatchObject({ code: 0, stdout: "Database is up to date; no migration applied.\n" });
    expect(await sluice("migrate", "--check")).toMatchObject({ code: 0, stdout: "Database is up to date with this release.\n" });
  });

  it("refuses a database newer than this release, with and without --check, and changes nothing", async () => {
    await query(
      `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, finished_at, applied_steps_count)
       VALUES ('00000000-0000-4000-8000-000000000031', '${"0".repeat(64)}', '99990101000000_next_release', now(), now(), 1)`,
    );
    const message =
      "error: The database is newer than this code: 99990101000000_next_release is applied but not in this release's " +
      "prisma/migrations. Nothing was applied. Run the release that added it, or a newer one.\n";
    expect(await sluice("migrate")).toEqual({ code: 1, stdout: "", stderr: message });
    expect(await sluice("migrate", "--check")).toEqual({ code: 1, stdout: "", stderr: message });
    expect(await query(`SELECT count(*)::int AS n FROM "_prisma_migrations"`)).toEqual([{ n: names.length + 1 }]);
  });

  it("needs DATABASE_URL, and says so", async () => {
    const run = await runSluice({ DATABASE_URL: "" }, ["migrate"]);
    expect(run).toMatchObject({ code: 1, stderr: "error: DATABASE_URL is not set (e.g. postgresql://postgres@127.0.0.1:5432/sluice; while `npm run demo` runs, sluice finds its database by itself)\n" });
  });
});
