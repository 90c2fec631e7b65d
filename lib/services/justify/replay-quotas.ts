/**
 * Which tenants would run out of their monthly quota under a version, and on which day: a
 * projection, since a quota spans a calendar month and the replay a few days (lib/services/justify/replay.ts).
 *
 * For a tenant and a month quota of a version (its tier's, or its override):
 *   used so far  = the month's admitted requests on the operations it covers, as recorded (for the
 *                  draft, scaled per operation by what the draft admits of the replayed traffic
 *                  against what the live version admits of it);
 *   the run-out day is the tenant page's projection of that use (lib/policy/quota-projection.ts:
 *   the rate so far, extrapolated), so the live version's day is the one the tenant page shows for
 *   the same use, and the draft's differs only by what the draft admits (`overage: bill`: that is
 *   the day overage starts).
 * Requests of cost > 1 count as one (as QuotaUsage does for decisions).
 */
import type { CompiledPolicyBody } from "../../policy/compiled";
import { limitsFor } from "../../policy/effective-limits";
import { quotaPeriod } from "../../policy/quota-period";
import { projectQuota } from "../../policy/quota-projection";
import { ANY_OPERATION } from "../../policy/types";
import type { ReplayResult } from "./replay";

const DAY_MS = 86_400_000;

export interface QuotaRunOut {
  tenant: string;
  tier: string;
  operation: string;
  limit: number;
  overage: "block" | "bill";
  usedSoFar: number;
  /** The rate so far (used ÷ days elapsed this month). */
  perDay: number;
  /** ISO date (YYYY-MM-DD) it runs out, null when not this month. */
  runsOutOn: string | null;
}

/** The month quotas of every tenant the replay saw, projected under `doc`. */
export function projectMonthQuotas(
  doc: CompiledPolicyBody,
  replay: ReplayResult,
  options: { monthToDate: Map<string, Map<string, number>>; scale?: (tenant: string, operation: string) => number; nowMs: number },
): QuotaRunOut[] {
  const out: QuotaRunOut[] = [];
  const { startMs, endMs } = quotaPeriod(options.nowMs, "month");
  const elapsedDays = Math.max(0, Math.min(options.nowMs, endMs) - startMs) / DAY_MS;
  for (const tenant of Object.keys(replay.tenants).sort()) {
    const effective = limitsFor(doc, tenant, ANY_OPERATION, options.nowMs);
    if (!effective) continue;
    // Every month quota that applies to some operation of this tenant (overrides included).
    const operations = [ANY_OPERATION, ...Object.keys(doc.operations)];
    const seen = new Map<string, (typeof effective.quotas)[number]>();
    for (const op of operations) {
      for (const q of limitsFor(doc, tenant, op, options.nowMs)?.quotas ?? []) if (q.period === "month") seen.set(q.id, q);
    }
    const mtd = options.monthToDate.get(tenant) ?? new Map<string, number>();
    for (const q of seen.values()) {
      const covers = (op: string) => q.operation === ANY_OPERATION || q.operation === op;
      let used = 0;
      for (const [op, n] of mtd) if (covers(op)) used += n * (options.scale?.(tenant, op) ?? 1);
      const { runsOutAt } = projectQuota(used, q.limit, startMs, endMs, options.nowMs);
      out.push({
        tenant,
        tier: effective.tier.name,
        operation: q.operation,
        limit: q.limit,
        overage: q.overage,
        usedSoFar: Math.round(used),
        perDay: elapsedDays > 0 ? Math.round(used / elapsedDays) : 0,
        runsOutOn: runsOutAt === null ? null : new Date(runsOutAt).toISOString().slice(0, 10),
      });
    }
  }
  return out;
}
