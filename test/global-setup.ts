/**
 * Global setup of the `int` vitest project: every test run gets its own PostgreSQL database and its
 * own Redis key prefix, so parallel runs (other engineers, CI) never see each other's data.
 *
 * - creates `sluice_test_<epochMs>_<random>` on the server of DATABASE_URL
 *   (default postgresql://postgres@127.0.0.1:5432/test) and applies prisma/migrations to it;
 * - points DATABASE_URL at it, sets SLUICE_REDIS_PREFIX to `t<random>:`, defaults REDIS_URL;
 * - `provide`s the same three values (read them in tests with test/helpers.ts);
 * - bundles the decision server, the worker and the CLI as `npm run build` does, into
 *   .cache/int-<random>/ (SLUICE_TEST_BUNDLE_DIR), which the tests' processes start from
 *   (lib/processes/harness.ts entryArgs): plain node starts in a third of tsx's time;
 * - teardown drops the database, deletes this run's Redis keys (SCAN MATCH prefix*, never FLUSHALL)
 *   and the bundle.
 */
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import path from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { migrate } from "../lib/db/migrate";
import { bundleServer } from "../scripts/build";

declare module "vitest" {
  export interface ProvidedContext {
    /** This run's migrated database. */
    sluiceDatabaseUrl: string;
    sluiceRedisUrl: string;
    /** Prefix of every Redis key this run may write, e.g. `t1a2b3c4d:`. */
    sluiceRedisPrefix: string;
  }
}

export const DEFAULT_TEST_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test";
export const DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379";

/** Databases this suite creates are named like this; the timestamp lets stale ones be found. */
const TEST_DATABASE_PATTERN = /^sluice_test_(\d{13})_[0-9a-f]+$/;
/** A database left behind by a run that crashed is dropped by a later run after this long. */
const STALE_AFTER_MS = 12 * 3_600_000;

export function testDatabaseName(nowMs: number = Date.now()): string {
  return `sluice_test_${nowMs}_${randomBytes(4).toString("hex")}`;
}

/** The same server and credentials as `baseUrl`, another database. */
export function withDatabase(baseUrl: string, database: string): string {
  const url = new URL(baseUrl);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}

async function withAdminClient<T>(baseUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: baseUrl, connectionTimeoutMillis: 10_000 });
  await client.connect();
  client.on("error", () => undefined);
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Creates an empty database named `name` on the server of `baseUrl` (connecting to `baseUrl`'s own
 * database to do it) and, unless `migrate: false`, applies prisma/migrations. Returns its URL.
 */
export async function createTestDatabase(
  baseUrl: string,
  name: string = testDatabaseName(),
  options: { migrate?: boolean } = {},
): Promise<string> {
  if (!/^[a-z0-9_]{1,63}$/.test(name)) {
    throw new Error(`refusing to create database with unexpected name ${JSON.stringify(name)}`);
  }
  await withAdminClient(baseUrl, (client) => client.query(`CREATE DATABASE "${name}"`));
  const url = withDatabase(baseUrl, name);
  if (options.migrate !== false) {
    try {
      await migrate(url);
    } catch (error) {
      await dropTestDatabase(baseUrl, name).catch(() => undefined);
      throw error;
    }
  }
  return url;
}

/** Drops `name`, closing any connection a test left open (WITH (FORCE), PostgreSQL 13+). */
export async function dropTestDatabase(baseUrl: string, name: string): Promise<void> {
  await withAdminClient(baseUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

/** Drops databases of earlier runs that died before their teardown (older than STALE_AFTER_MS). */
async function dropStaleTestDatabases(baseUrl: string, nowMs: number): Promise<void> {
  const names = await withAdminClient(baseUrl, async (client) => {
    const { rows } = await client.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE 'sluice\\_test\\_%'",
    );
    return rows.map((r) => r.datname);
  });
  for (const name of names) {
    const match = TEST_DATABASE_PATTERN.exec(name);
    if (match && nowMs - Number(match[1]) > STALE_AFTER_MS) {
      await dropTestDatabase(baseUrl, name).catch(() => undefined);
    }
  }
}

/** Deletes every key starting with `prefix` (SCAN + UNLINK in batches; never FLUSHALL/FLUSHDB). */
export async function deleteRedisKeys(redisUrl: string, prefix: string): Promise<number> {
  if (!/^[A-Za-z0-9:_-]{2,32}$/.test(prefix)) {
    // An empty or odd prefix would match other people's keys on the shared server.
    throw new Error(`refusing to delete Redis keys with prefix ${JSON.stringify(prefix)}`);
  }
  const redis = new Redis(redisUrl, {
    lazyConnect: true,
    connectTimeout: 2_000,
    commandTimeout: 5_000,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  redis.on("error", () => undefined);
  await redis.connect();
  try {
    let cursor = "0";
    let deleted = 0;
    do {
      const [next, batch] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      cursor = next;
      if (batch.length > 0) deleted += await redis.unlink(...batch);
    } while (cursor !== "0");
    return deleted;
  } finally {
    redis.disconnect();
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const originalDatabaseUrl = process.env.DATABASE_URL;
  const baseUrl = originalDatabaseUrl ?? DEFAULT_TEST_DATABASE_URL;
  const redisUrl = process.env.REDIS_URL ?? DEFAULT_TEST_REDIS_URL;
  const nowMs = Date.now();
  const name = testDatabaseName(nowMs);
  const redisPrefix = `t${randomBytes(4).toString("hex")}:`;

  await dropStaleTestDatabases(baseUrl, nowMs).catch(() => undefined);
  // Two levels below the root, as dist/server is (code finds ../../prisma from there).
  const bundleDir = path.resolve(import.meta.dirname, "..", ".cache", `int-${randomBytes(4).toString("hex")}`);
  const [databaseUrl] = await Promise.all([createTestDatabase(baseUrl, name), bundleServer({ write: true, outdir: bundleDir })]);

  // Test workers are created after this runs and inherit these (verified with vitest 4.1);
  // `provide` carries the same values for code that prefers inject().
  process.env.DATABASE_URL = databaseUrl;
  process.env.REDIS_URL = redisUrl;
  process.env.SLUICE_REDIS_PREFIX = redisPrefix;
  process.env.SLUICE_TEST_BASE_DATABASE_URL = baseUrl;
  process.env.SLUICE_TEST_BUNDLE_DIR = bundleDir;
  project.provide("sluiceDatabaseUrl", databaseUrl);
  project.provide("sluiceRedisUrl", redisUrl);
  project.provide("sluiceRedisPrefix", redisPrefix);

  return async function teardown(): Promise<void> {
    const problems: string[] = [];
    await dropTestDatabase(baseUrl, name).catch((e: unknown) => problems.push(`drop database ${name}: ${String(e)}`));
    await deleteRedisKeys(redisUrl, redisPrefix).catch((e: unknown) =>
      problems.push(`delete Redis keys ${redisPrefix}*: ${String(e)}`),
    );
    rmSync(bundleDir, { recursive: true, force: true });
    if (originalDatabaseUrl === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = originalDatabaseUrl;
    if (problems.length > 0) console.warn(`[global-setup] teardown left something behind:\n  ${problems.join("\n  ")}`);
  };
}
