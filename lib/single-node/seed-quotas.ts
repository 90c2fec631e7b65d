/**
 * Single-node quota counters live in the in-process store, so a restart would forget what a tenant
 * already used this day or month. Before serving, the decision server seeds them from QuotaUsage
 * (what the usage sink committed, lib/single-node/postgres-usage-sink.ts) for the current day and
 * month: each row becomes the `used` of its quota counter, under the same key the engine checks
 * (`keys.quota(tenant, quotaId)`, lib/decision/checks.ts).
 *
 * The seed goes through the store's own interface: one check of the quota with `overage: bill`
 * (always passes) and cost = used, which leaves exactly `{ period, used }` behind; the limit is not
 * part of a quota's state, so the real limit applies from the first decision on.
 *
 * Limits of the seed, said in docs/operations.md: QuotaUsage counts decisions, the counter counts units,
 * so decisions of cost > 1 are seeded as 1 each; a crash loses the uncommitted minutes (see the
 * sink), which are then missing from the seed too.
 */
import type { Db } from "../db/client";
import { quotaPeriodKey } from "../jobs/quota-defs";
import { keys } from "../redis/keys";
import type { CounterStore, LimitCheck } from "../store/types";
import { withQueryTimeout } from "./timeout";

export interface SeededQuotas {
  counters: number;
  /** Sum of the seeded `used`. */
  units: number;
}

export async function seedQuotaCounters(db: Db, store: CounterStore, { nowMs }: { nowMs: number }): Promise<SeededQuotas> {
  const month = quotaPeriodKey("month", nowMs);
  const day = quotaPeriodKey("day", nowMs);
  const rows = await withQueryTimeout(
    db.quotaUsage.findMany({ where: { period: { in: [month, day] }, used: { gt: 0 } }, select: { tenant: true, quotaId: true, period: true, used: true } }),
    "reading QuotaUsage",
  );
  const seeded: SeededQuotas = { counters: 0, units: 0 };
  for (const row of rows) {
    const used = Number(row.used);
    if (!Number.isSafeInteger(used) || used < 1) continue;
    const check: LimitCheck = {
      key: keys.quota(row.tenant, row.quotaId),
      kind: "quota",
      algorithm: "quota",
      limit: used,
      windowMs: 0,
      burst: used,
      precision: 1,
      mode: "reject",
      maxDelayMs: 0,
      leaseTtlMs: 0,
      period: row.period === month ? "month" : "day",
      overage: "bill",
    };
    const decision = await store.check([check], { cost: used, dryRun: false });
    if (decision.allowed) {
      seeded.counters++;
      seeded.units += used;
    }
  }
  return seeded;
}
