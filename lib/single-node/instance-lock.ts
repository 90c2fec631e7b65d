/**
 * "Never more than one replica", enforced: a single-node decision server holds a session-level
 * Postgres advisory lock on a connection of its own for as long as it runs. A second one against
 * the same database cannot take it and refuses to start (its counters would be a second, separate
 * set: every limit would be doubled). The lock goes with the connection, so a crashed or killed
 * process never leaves it held; a clean stop releases it by closing the connection.
 *
 * If the connection drops while running, the lock is gone: this process reconnects and takes it
 * again; when another process got it meanwhile, it says so loudly in its log (and keeps serving:
 * stopping would turn a misconfiguration into an outage).
 */
import pg from "pg";
import { messageOf } from "./timeout";

/** The advisory lock key: hashtext() of this string, the same scheme as the jobs' locks (lib/jobs/lock.ts). */
export const SINGLE_NODE_LOCK = "sluice:single-node:decision-server";

export class InstanceLockedError extends Error {
  constructor() {
    super(
      "another single-node decision server is running against this database (SLUICE_MODE=single-node allows exactly one; " +
        "stop the other one, or run the Redis mode for more replicas)",
    );
  }
}

export interface InstanceLock {
  release(): Promise<void>;
}

async function tryLock(connectionString: string): Promise<{ client: pg.Client; locked: boolean }> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 5_000, application_name: "sluice-single-node-lock" });
  client.on("error", () => undefined);
  await client.connect();
  const result = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock(hashtext($1)) AS locked", [SINGLE_NODE_LOCK]);
  return { client, locked: result.rows[0]?.locked === true };
}

/** Takes the lock or throws InstanceLockedError (or the connection's error). */
export async function acquireInstanceLock(connectionString: string, log: (message: string) => void): Promise<InstanceLock> {
  const first = await tryLock(connectionString);
  if (!first.locked) {
    await first.client.end().catch(() => undefined);
    throw new InstanceLockedError();
  }
  let client: pg.Client | null = first.client;
  let released = false;
  let retry: NodeJS.Timeout | null = null;

  const watch = (c: pg.Client) => {
    c.once("end", () => {
      if (released) return;
      log("single-node lock connection lost; taking the lock again");
      client = null;
      schedule(1_000);
    });
  };
  const schedule = (ms: number) => {
    retry = setTimeout(() => void relock(ms), ms);
    retry.unref();
  };
  const relock = async (lastMs: number) => {
    retry = null;
    if (released) return;
    try {
      const next = await tryLock(connectionString);
      if (released) {
        await next.client.end().catch(() => undefined);
        return;
      }
      client = next.client;
      watch(next.client);
      if (next.locked) log("single-node lock taken again");
      else log(`ERROR: ${new InstanceLockedError().message}`);
    } catch (error) {
      schedule(Math.min(lastMs * 2, 10_000));
      if (lastMs === 1_000) log(`single-node lock: cannot reach PostgreSQL (${messageOf(error)}); retrying`);
    }
  };
  watch(first.client);

  return {
    async release() {
      released = true;
      if (retry) clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}
