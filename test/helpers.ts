/**
 * What integration tests need to reach this run's services. test/global-setup.ts created them; these
 * read process.env (inherited by every vitest worker) and fall back to vitest's inject().
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, inject } from "vitest";
import { createDb } from "../lib/db/client";
import type { PrismaClient } from "../lib/generated/prisma/client";
import {
  DEFAULT_TEST_DATABASE_URL,
  DEFAULT_TEST_REDIS_URL,
  createTestDatabase,
  dropTestDatabase,
  testDatabaseName,
} from "./global-setup";

function provided<K extends "sluiceDatabaseUrl" | "sluiceRedisUrl" | "sluiceRedisPrefix">(key: K): string | undefined {
  try {
    return inject(key);
  } catch {
    // Outside a vitest worker (a script importing this file) there is nothing to inject.
    return undefined;
  }
}

/** This run's migrated database (shared by all test files of the run; use unique ids in your rows). */
export function testDatabaseUrl(): string {
  const url = process.env.DATABASE_URL ?? provided("sluiceDatabaseUrl");
  if (!url) throw new Error("no test database: run integration tests with `vitest run --project int`");
  return url;
}

export function testRedisUrl(): string {
  return process.env.REDIS_URL ?? provided("sluiceRedisUrl") ?? DEFAULT_TEST_REDIS_URL;
}

/** Prefix of every Redis key this run may write (`t<random>:`); teardown deletes `<prefix>*`. */
export function testRedisPrefix(): string {
  const prefix = process.env.SLUICE_REDIS_PREFIX ?? provided("sluiceRedisPrefix");
  if (!prefix) throw new Error("no test Redis prefix: run integration tests with `vitest run --project int`");
  return prefix;
}

export interface FreshDatabase {
  url: string;
  /** A Prisma client on it (disconnected by drop). */
  db: PrismaClient;
  /** Disconnects `db` and drops the database, closing connections left open. Idempotent. */
  drop(): Promise<void>;
}

/**
 * A database of its own, for a test that must see an empty (or specially prepared) database:
 * created on the same server as the run's database, migrated unless `migrate: false`.
 * Call `drop()` in afterAll.
 */
export async function freshDatabase(options: { migrate?: boolean } = {}): Promise<FreshDatabase> {
  const baseUrl = process.env.SLUICE_TEST_BASE_DATABASE_URL ?? process.env.DATABASE_URL ?? DEFAULT_TEST_DATABASE_URL;
  const name = testDatabaseName();
  const url = await createTestDatabase(baseUrl, name, options);
  const db = createDb(url);
  let dropped = false;
  return {
    url,
    db,
    async drop() {
      if (dropped) return;
      dropped = true;
      await db.$disconnect();
      await dropTestDatabase(baseUrl, name);
    },
  };
}

/**
 * A database and a Redis client of the calling test file's own: registers a beforeAll that creates
 * them (with `namespace`, the file's own Redis key prefix inside the run's) and an afterAll that
 * closes them. Call it at the top level; read `db` and `redis` inside hooks and tests.
 */
export function freshStoresPerFile(namespace?: string): { db: PrismaClient; redis: Redis } {
  const stores = {} as { db: PrismaClient; redis: Redis };
  let fresh: FreshDatabase | undefined;
  beforeAll(async () => {
    if (namespace) process.env.SLUICE_REDIS_PREFIX = `${testRedisPrefix()}${namespace}:`;
    fresh = await freshDatabase();
    stores.db = fresh.db;
    stores.redis = new Redis(testRedisUrl());
  });
  afterAll(async () => {
    await fresh?.drop();
    stores.redis?.disconnect();
  });
  return stores;
}

/** Polls until a condition holds (lib/processes/harness.ts, also how spawned processes are awaited). */
export { until } from "../lib/processes/harness";
