/**
 * The guardrail's comparison of a rollout's cohort with its control over one minute (pure): the
 * guard judges with it (lib/jobs/rollout-guard.ts) and the Policy page's charts draw it
 * (./rollout-charts.ts), so the margins drawn are the margins judged.
 */
import type { GuardCheck } from "./rollout-view";

/** One tenant's (or group's) decisions on one operation in a minute: every denial, and the 429s among them (lib/db/rollout-usage-repo.ts). */
export interface GuardRow {
  tenant: string;
  operation: string;
  total: number;
  denied: number;
  denied429: number;
}

/**
 * The cohort against the control over one minute (pure over the minute's rows). The 429 share is
 * the 429s over the decisions, as the dashboards count it: a cohort whose denials are unknown keys
 * (401), suspended tenants (403) or a closed store (503) has no 429s from them.
 */
export function compareCohort(rows: readonly GuardRow[], cohort: ReadonlySet<string>, maxIncreasePoints: number, minDecisions: number) {
  const ops = new Set<string>();
  const perTenant = new Map<string, { total: number; denied: number }>();
  const c = { decisions: 0, denied: 0, denied429: 0 };
  for (const r of rows) {
    if (!cohort.has(r.tenant)) continue;
    ops.add(r.operation);
    c.decisions += r.total;
    c.denied += r.denied;
    c.denied429 += r.denied429;
    const t = perTenant.get(r.tenant) ?? { total: 0, denied: 0 };
    t.total += r.total;
    t.denied += r.denied429;
    perTenant.set(r.tenant, t);
  }
  const k = { decisions: 0, denied: 0, denied429: 0 };
  for (const r of rows) {
    if (cohort.has(r.tenant) || !ops.has(r.operation)) continue;
    k.decisions += r.total;
    k.denied += r.denied;
    k.denied429 += r.denied429;
  }
  const cohortShare = c.decisions > 0 ? c.denied429 / c.decisions : 0;
  const controlShare = k.decisions > 0 ? k.denied429 / k.decisions : 0;
  const marginPoints = (cohortShare - controlShare) * 100;
  // At 100% (everyone in the cohort) there is no control to compare with: nothing to judge.
  const verdict: GuardCheck["verdict"] = c.decisions < minDecisions ? "too_few_decisions" : k.decisions === 0 ? "no_control" : marginPoints > maxIncreasePoints ? "breached" : "holds";
  const tripped = [...perTenant]
    .filter(([, t]) => t.total > 0 && (t.denied / t.total - controlShare) * 100 > maxIncreasePoints)
    .map(([tenant]) => tenant)
    .sort();
  /** `perTenant`: each cohort tenant's decisions and 429s (`denied`), for ./rollout-guardrails.ts. */
  return { cohort: { ...c, share: cohortShare }, control: { ...k, share: controlShare }, marginPoints, verdict, tripped, perTenant };
}
