/**
 * One tenant's usage for its own page (#18 job 2): its traffic over the last hour, day and 30 days
 * (decisions by outcome, denials by the decision API's reason, and the 429 share: 429s only), its 429s of the last 24 hours by the limit that denied
 * them, and this month's quota burn with the projection to month end. From the rollups the worker
 * drains exactly once; the same figures the usage API and the dashboards read.
 */
import type { Db } from "../../db/client";
import { denialTotals } from "../../db/denial-repo";
import { limitDenialTotals, usageTotals } from "../../db/usage-repo";
import { count429, type DenialsByReason } from "../../policy/denial-reasons";
import { getQuotas, type QuotaBurn } from "./usage-query";

export interface TenantUsageWindow {
  label: string;
  decisions: number;
  /** Admitted: allowed, shadow-denied and degraded decisions. */
  passed: number;
  denied: number;
  /** Denied / decisions, 0–1; null with no decisions. */
  denyShare: number | null;
  /** The denials by the decision API's reason. */
  byReason: DenialsByReason;
  /** 429s (limits and quotas) / decisions, 0–1; null with no decisions. */
  share429: number | null;
}

export interface TenantUsage {
  windows: TenantUsageWindow[];
  deniedByLimit: { tenant: string; operation: string; limit: string; denied: number }[];
  quotas: QuotaBurn[];
  period: string;
}

const WINDOWS = [
  { label: "last hour", ms: 3_600_000 },
  { label: "last 24 hours", ms: 86_400_000 },
  { label: "last 30 days", ms: 30 * 86_400_000 },
] as const;

export async function tenantUsage(db: Db, slug: string, nowMs: number): Promise<TenantUsage> {
  // The running minute is not drained yet: windows end at the last complete minute.
  const toMs = Math.floor(nowMs / 60_000) * 60_000;
  const windows: TenantUsageWindow[] = [];
  for (const w of WINDOWS) {
    const t = await usageTotals(db, { fromMs: toMs - w.ms, toMs, tenant: slug });
    const decisions = Object.values(t).reduce((a, b) => a + b, 0);
    const denied = t.denied ?? 0;
    const byReason = await denialTotals(db, { fromMs: toMs - w.ms, toMs, tenant: slug, denied });
    windows.push({
      label: w.label,
      decisions,
      passed: decisions - denied,
      denied,
      denyShare: decisions > 0 ? denied / decisions : null,
      byReason,
      share429: decisions > 0 ? count429(byReason) / decisions : null,
    });
  }
  const period = new Date(nowMs).toISOString().slice(0, 7);
  const [deniedByLimit, quotas] = await Promise.all([
    limitDenialTotals(db, { fromMs: toMs - 86_400_000, toMs, tenant: slug }),
    getQuotas(db, { period, tenant: slug, nowMs }),
  ]);
  return { windows, deniedByLimit, quotas: quotas.quotas, period };
}

/** The dashboards' "429s by limit" panel: the range's 429s by tenant, operation and the limit that denied them. */
export async function deniedByLimitForRange(db: Db, range: { fromMs: number; toMs: number }, top = 20) {
  return limitDenialTotals(db, { ...range, limit: top });
}
