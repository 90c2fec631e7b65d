/**
 * One advisory lock per job, so several workers may run: a job's transaction takes
 * `pg_try_advisory_xact_lock(hashtext('sluice:job:<name>'))` first and does nothing when another
 * worker holds it. The lock is released with the transaction, so a killed worker never leaves it held.
 * Correctness never depends on the lock (the rollup cursor is unique); it only avoids wasted work.
 */
import type { Tx } from "../db/client";

export type JobName = "rollup" | "downsample" | "reconcile" | "billing-close" | "alerts";

export async function tryJobLock(tx: Tx, job: JobName): Promise<boolean> {
  const rows = await tx.$queryRawUnsafe<{ locked: boolean }[]>(
    "SELECT pg_try_advisory_xact_lock(hashtext($1)) AS locked",
    `sluice:job:${job}`,
  );
  return rows[0]?.locked === true;
}
