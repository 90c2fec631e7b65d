/**
 * Downsampling: minute rows older than ROLLUP_DOWNSAMPLE_AFTER_MS are deleted. Their hour (and day)
 * rows were written by the rollup in the same transaction as the minute, so nothing is summed here
 * and the hour totals stay exact; deleting in batches keeps each transaction short.
 */
import type { Db } from "../db/client";
import { tryJobLock } from "./lock";

export async function downsampleMinutes(db: Db, { nowMs, afterMs, batch = 20_000 }: { nowMs: number; afterMs: number; batch?: number }): Promise<number> {
  const cutoff = new Date(Math.floor((nowMs - afterMs) / 3_600_000) * 3_600_000);
  let deleted = 0;
  for (;;) {
    const n = await db.$transaction(async (tx) => {
      if (!(await tryJobLock(tx, "downsample"))) return 0;
      return tx.$executeRawUnsafe(
        `DELETE FROM "UsageRollup" WHERE ctid IN (
           SELECT ctid FROM "UsageRollup" WHERE "granularity" = 'minute' AND "bucketStart" < $1::timestamp(3) LIMIT $2)`,
        cutoff.toISOString().replace("T", " ").replace("Z", ""),
        batch,
      );
    });
    deleted += n;
    if (n < batch) return deleted;
  }
}
