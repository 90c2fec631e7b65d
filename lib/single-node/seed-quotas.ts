/**
 * Single-node quota counters live in the in-process store, so a restart would forget what a tenant
 * already used this day or month. Before serving, the decision server seeds them from QuotaUsage
 * (what the usage sink committed, lib/single-node/postgres-usage-sink.ts) for each quota's current
 * period — the tenant's own (an anchored tenant's `2026-11-15@America/Los_Angeles` row, through
 * the same window the decision path plans, lib/policy/quota-window.ts), else the UTC day and
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
import { quotaPeriodKey } from "../db/quota-defs";
import type { CompiledPolicyBody } from "../policy/compiled";
import { quotaWindow, type QuotaWindow } from "../policy/quota-window";
import { usageReadPlan } from "../policy/tenant-usage-answer";
import type { Period } from "../policy/types";
import { keys } from "../redis/keys";
import type { CounterStore, LimitCheck } from "../store/types";
import { withQueryTimeout } from "./timeout";

/** Each tenant × quota of the policy: the label of its current period and the window the engine plans. */
function currentWindows(doc: CompiledPolicyBody | null, nowMs: number): Map<string, { label: string; period: Period; window: QuotaWindow }> {
  const out = new Map<string, { label: string; period: Period; window: QuotaWindow }>();
  for (const [slug, tenant] of Object.entries(doc?.tenants ?? {})) {
    for (const q of usageReadPlan(doc!, slug, nowMs, "")?.quotas ?? []) {
      out.set(`${slug}|${q.quota.id}`, { label: q.period.label, period: q.quota.period, window: quotaWindow(nowMs, q.quota, tenant) });
    }
  }
  return out;
}

export interface SeededQuotas {
  counters: number;
  /** Sum of the seeded `used`. */
  units: number;
}

/**
 * `doc` is the policy in force: its tenants' quotas are seeded in their own periods. Rows of
 * quotas it does not have (a tenant or quota just removed) are seeded on the UTC calendar as before.
 */
export async function seedQuotaCounters(db: Db, store: CounterStore, { nowMs, doc }: { nowMs: number; doc: CompiledPolicyBody | null }): Promise<SeededQuotas> {
  const month = quotaPeriodKey("month", nowMs);
  const day = quotaPeriodKey("day", nowMs);
  const windows = currentWindows(doc, nowMs);
  const labels = new Set([month, day, ...[...windows.values()].map((w) => w.label)]);
  const rows = await withQueryTimeout(
    db.quotaUsage.findMany({ where: { period: { in: [...labels] }, used: { gt: 0 } }, select: { tenant: true, quotaId: true, period: true, used: true } }),
    "reading QuotaUsage",
  );
  const seeded: SeededQuotas = { counters: 0, units: 0 };
  for (const row of rows) {
    const used = Number(row.used);
    if (!Number.isSafeInteger(used) || used < 1) continue;
    const planned = windows.get(`${row.tenant}|${row.quotaId}`);
    // A quota of the policy counts in its own period only (an anchored tenant also has UTC rows).
    if (planned ? row.period !== planned.label : row.period !== month && row.period !== day) continue;
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
      period: planned ? planned.period : row.period === month ? "month" : "day",
      overage: "bill",
      // The same window the engine plans: the seed lands in the period the first decision counts in.
      ...(planned ? { quotaWindow: { current: { ...planned.window.current, limit: used, carry: "" }, next: { ...planned.window.next, limit: used, carry: "" } } } : {}),
    };
    const decision = await store.check([check], { cost: used, dryRun: false });
    if (decision.allowed) {
      seeded.counters++;
      seeded.units += used;
    }
  }
  return seeded;
}
