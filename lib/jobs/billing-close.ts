/**
 * Period close: a calendar month (UTC) is closed once it ended `graceMs` ago (BILLING_GRACE_MS,
 * default 1 h), or once the last tenant period it holds ended `graceMs` ago when that is later (a
 * tenant anchored on the 1st in Los Angeles: its November ends at 08:00 UTC on December 1). In one transaction, under the period row's lock (the rollup takes the same lock
 * before adding usage), the month's lines are computed from quota usage and frozen, the status set
 * to closed and the export checksums recorded. Usage drained later becomes an adjustment
 * (lib/jobs/rollup.ts). A crash anywhere leaves the month open or closed, never half closed.
 */
import type { Db } from "../db/client";
import { frozenLinePeriod, knownMonths, monthOf, monthRangeMs } from "../db/billing-repo";
import { BILLING_FORMATS, renderStatement, sha256Hex } from "../services/billing/billing-format";
import { buildStatement, closeDueAtMs, computeLines } from "../services/billing/billing-statement";
import { tryJobLock } from "./lock";

export interface CloseDeps {
  db: Db;
  onStep?: (step: "closed", month: string) => void | Promise<void>;
}

/** Closes one month; returns false when it was already closed, not due, or another worker holds the job. */
export async function closePeriod(db: Db, month: string, { nowMs, graceMs }: { nowMs: number; graceMs: number }): Promise<boolean> {
  if (monthRangeMs(month).endMs + graceMs > nowMs) return false;
  return db.$transaction(
    async (tx) => {
      if (!(await tryJobLock(tx, "billing-close"))) return false;
      await tx.$executeRawUnsafe(
        `INSERT INTO "BillingPeriod" ("period","status","revision","updatedAt") VALUES ($1, 'open', 0, now()) ON CONFLICT ("period") DO NOTHING`,
        month,
      );
      const [row] = await tx.$queryRawUnsafe<{ status: string }[]>(`SELECT "status" FROM "BillingPeriod" WHERE "period" = $1 FOR UPDATE`, month);
      if (row?.status === "closed") return false;
      if ((await closeDueAtMs(tx, month, graceMs)) > nowMs) return false;
      const lines = await computeLines(tx, month);
      if (lines.length > 0) {
        await tx.billingLine.createMany({
          data: lines.map((l, i) => ({
            // Lines are sorted by tenant, quota, then period: the last of a tenant × quota keeps the month.
            period: frozenLinePeriod(month, l.billingPeriod?.label ?? "", lines[i + 1]?.tenant !== l.tenant || lines[i + 1]?.quotaId !== l.quotaId),
            tenant: l.tenant,
            quotaId: l.quotaId,
            tenantName: l.tenantName,
            tier: l.tier,
            tierHistory: l.tierHistory.map((t) => ({ tier: t.tier, from: t.from, to: t.to })),
            operation: l.operation,
            quotaPeriod: l.quotaPeriod,
            limit: BigInt(l.limit),
            overage: l.overage,
            used: BigInt(l.used),
            overageUnits: BigInt(l.overageUnits),
            // The export's `denied` is quotaDenied; `denied` keeps every denial on the quota's operations.
            denied: BigInt(l.deniedAnyReason),
            quotaDenied: BigInt(l.denied),
            ...(l.billingPeriod ? { periodLabel: l.billingPeriod.label, billingPeriod: { ...l.billingPeriod } } : {}),
          })),
        });
      }
      await tx.billingPeriod.update({ where: { period: month }, data: { status: "closed", closedAt: new Date(nowMs), revision: 0 } });
      const statement = await buildStatement(tx, month);
      const checksums = Object.fromEntries(BILLING_FORMATS.map((f) => [f, sha256Hex(renderStatement(statement, f))]));
      await tx.billingPeriod.update({ where: { period: month }, data: { checksums } });
      return true;
    },
    { timeout: 120_000, maxWait: 10_000 },
  );
}

/**
 * The months to consider closing: every month with usage or a period row, and every month from the
 * first of them to now — a month in which no tenant sent a single request still has its lines
 * (used 0) and must close too. Months before the first known one are left alone: usage was not
 * tracked then.
 */
export function monthsToClose(known: readonly string[], nowMs: number): string[] {
  const months = new Set(known);
  const first = [...known].sort()[0];
  if (first !== undefined) {
    const last = monthOf(nowMs);
    for (let m = first; m < last; m = monthOf(monthRangeMs(m).endMs)) months.add(m);
  }
  return [...months].sort();
}

/** Closes every known month that is due. Returns the months closed by this call. */
export async function closeDuePeriods(deps: CloseDeps, { nowMs, graceMs }: { nowMs: number; graceMs: number }): Promise<string[]> {
  const closed: string[] = [];
  for (const month of monthsToClose(await knownMonths(deps.db), nowMs)) {
    if (await closePeriod(deps.db, month, { nowMs, graceMs })) {
      closed.push(month);
      await deps.onStep?.("closed", month);
    }
  }
  return closed;
}
