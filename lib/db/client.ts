/**
 * The one Prisma client of a process, over the `pg` driver adapter (Prisma 7).
 * Created lazily so that importing a module never opens a connection.
 */
import { PrismaPg } from "@prisma/adapter-pg";
import { currentEnv } from "../env";
import { PrismaClient } from "../generated/prisma/client";

export type Db = PrismaClient;
/** The client handed to `prisma.$transaction(async (tx) => …)` callbacks. */
export type Tx = Parameters<Parameters<PrismaClient["$transaction"]>[0]>[0];

const globalForPrisma = globalThis as unknown as { sluicePrisma?: { url: string; client: PrismaClient } };

export function databaseUrl(): string {
  const url = currentEnv("DATABASE_URL");
  if (!url) throw new Error("DATABASE_URL is not set (npm run demo starts an embedded PostgreSQL and sets it)");
  return url;
}

export function createDb(connectionString: string = databaseUrl()): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString, connectionTimeoutMillis: 5_000 }) });
}

/** The process-wide client for DATABASE_URL (reused across Next.js hot reloads). */
export function db(): PrismaClient {
  const url = databaseUrl();
  const cached = globalForPrisma.sluicePrisma;
  if (cached && cached.url === url) return cached.client;
  const client = createDb(url);
  globalForPrisma.sluicePrisma = { url, client };
  return client;
}
