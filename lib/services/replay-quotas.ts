/**
 * Which tenants would run out of their monthly quota under a version, and on which day: a
 * projection, since a quota spans a calendar month and the replay a few days (lib/services/replay.ts).
 *
 * For a tenant and a month quota of a version (its tier's, or its override):
 *   used so far  = the month's admitted requests on the operations it covers, as recorded (for the
 *                  draft, scaled per operation by what the draft admits of the replayed traffic
 *                  against what the live version admits of it);
 *   daily rate   = what the version admits per day of the replayed traffic;
 *   it runs out on the first day where used so far + rate × days ≥ the quota, if that is before the
 *   month ends (`overage: bill`: that is the day overage starts).
 * Requests of cost > 1 count as one (as QuotaUsage does for decisions).
 */
import type { CompiledPolicyBody } from "../policy/compiled";
import { limitsFor } from "../policy/effective-limits";
import { quotaPeriod } from "../policy/quota-period";
import { ANY_OPERATION } from "../policy/types";
import type { ReplayResult } from "./replay";

const DAY_MS = 86_400_000;

export interface QuotaRunOut {
  tenant: string;
  tier: string;
  operation: string;
  limit: number;
  overage: "block" | "bill";
  usedSoFar: number;
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
  const days = Math.max(1 / 24, (replay.toMs - replay.fromMs) / DAY_MS);
  const { endMs } = quotaPeriod(options.nowMs, "month");
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
    const admitted = replay.admitted[tenant] ?? {};
    for (const q of seen.values()) {
      const covers = (op: string) => q.operation === ANY_OPERATION || q.operation === op;
      let used = 0;
      for (const [op, n] of mtd) if (covers(op)) used += n * (options.scale?.(tenant, op) ?? 1);
      let replayed = 0;
      for (const [op, n] of Object.entries(admitted)) if (covers(op)) replayed += n;
      const perDay = replayed / days;
      let runsOutAtMs: number | null = null;
      if (used >= q.limit) runsOutAtMs = options.nowMs;
      else if (perDay > 0) {
        const at = options.nowMs + ((q.limit - used) / perDay) * DAY_MS;
        if (at < endMs) runsOutAtMs = at;
      }
      out.push({
        tenant,
        tier: effective.tier.name,
        operation: q.operation,
        limit: q.limit,
        overage: q.overage,
        usedSoFar: Math.round(used),
        perDay: Math.round(perDay),
        runsOutOn: runsOutAtMs === null ? null : new Date(runsOutAtMs).toISOString().slice(0, 10),
      });
    }
  }
  return out;
}
