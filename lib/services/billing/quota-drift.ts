/**
 * Drift between enforcement and billing, where billing looks: the quota counters the decision
 * servers enforce (Redis) against the quota usage the export bills, as the worker's last
 * reconciliation found them (lib/jobs/reconcile.ts, recorded in JobRun "reconcile"). Each
 * difference comes with both numbers, the likeliest cause the policy history shows, and what to do.
 *
 * Causes, checked in this order against the published versions since the period began:
 *  - retired: the live policy no longer gives the tenant this quota (a publish or a rollback took
 *    it away): its counter stopped, and so did its usage, each at its own moment;
 *  - limit changed: a version in the period gave the quota another limit (a tenant override, or a
 *    rollback to a version with another one): the counter enforced one limit, then the other;
 *  - degraded: decisions passed without the store (they never reached the counter);
 *  - otherwise not known from the policy history.
 * Read-only.
 */
import type { Db } from "../../db/client";
import { readJobRun, type Drift } from "../../db/job-runs";
import { effectiveQuotas, PolicyHistory, type PolicyAt } from "../../db/quota-defs";

export type DriftCause = "retired" | "limit_changed" | "degraded" | "unknown";

export interface ExplainedDrift extends Drift {
  /** redis − expected. */
  difference: number;
  cause: DriftCause;
  /** The cause in a sentence, naming the version and time when known. */
  why: string;
  /** What to do about it, in a sentence. */
  todo: string;
}

export interface PeriodDrift {
  /** When the worker last compared counters and usage; null: never (or not in this deployment). */
  checkedAtMs: number | null;
  /** How many counters it compared then. */
  checked: number;
  /** The differences of this month's quotas (its month and its days). */
  differences: ExplainedDrift[];
}

const n = (x: number) => x.toLocaleString("en-US");
const at = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;

/** The period label's first day (UTC): `2026-12`, `2026-12-05`, or an anchored `2026-12-05@Europe/Paris`. */
function periodStartMs(period: string): number {
  const m = /^(\d{4})-(\d{2})(?:-(\d{2}))?/.exec(period);
  return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, m[3] ? Number(m[3]) : 1) : 0;
}

type RollbackOf = ReadonlyMap<number, number>;

function versionName(v: PolicyAt, rollbacks: RollbackOf): string {
  const from = rollbacks.get(v.version);
  return from === undefined ? `policy v${v.version} (published ${at(v.createdAtMs)})` : `the rollback to v${from} (published as v${v.version} at ${at(v.createdAtMs)})`;
}

/** The likeliest cause of one difference, from the versions published since its period began (newest first). */
export function explainDrift(d: Drift, versions: readonly PolicyAt[], rollbacks: RollbackOf, nowMs: number): ExplainedDrift {
  const difference = d.redis - d.expected;
  const base = { ...d, difference };
  const direction =
    difference > 0
      ? `Enforcement counted ${n(d.redis)} units, the export bills ${n(d.expected)}: the tenant was held to ${n(difference)} units more than it is billed for.`
      : `Enforcement counted ${n(d.redis)} units, the export bills ${n(d.expected)}: the tenant could pass ${n(-difference)} units the counter never saw.`;
  const fromMs = periodStartMs(d.period);
  const live = versions.find((v) => v.createdAtMs <= nowMs);
  // The versions in force during the period so far, newest first: those published in it, and the one live at its start.
  const published = versions.filter((v) => v.createdAtMs >= fromMs && v.createdAtMs <= nowMs);
  const atStart = versions.find((v) => v.createdAtMs < fromMs);
  const inPeriod = atStart ? [...published, atStart] : published;
  const defIn = (v: PolicyAt) => effectiveQuotas(v.doc, d.tenant, null, Math.max(v.createdAtMs, fromMs)).find((q) => q.id === d.quotaId);
  if (live && !defIn(live)) {
    // The newest version in the period that dropped it (the one before it still had it).
    const dropped = published.find((v, i) => !defIn(v) && inPeriod.slice(i + 1).some((p) => defIn(p)));
    return {
      ...base,
      cause: "retired",
      why: `${direction} This quota line is retired: ${dropped ? versionName(dropped, rollbacks) : "the live policy"} no longer gives ${d.tenant} this quota, so its counter stopped when the decision servers loaded that version and its usage at the minute it was published.`,
      todo: "Nothing enforces this line any more and neither number grows. Bill the export's figure (it is what passed); the counter expires with its period.",
    };
  }
  const limits = new Set(inPeriod.map((v) => defIn(v)?.limit).filter((x): x is number => x !== undefined));
  const changed = inPeriod.find((v, i) => {
    const before = inPeriod[i + 1];
    return before !== undefined && defIn(v)?.limit !== defIn(before)?.limit;
  });
  if (limits.size > 1 && changed) {
    return {
      ...base,
      cause: "limit_changed",
      why: `${direction} The quota's limit changed in this period (${[...limits].map(n).join(" → ")}), last by ${versionName(changed, rollbacks)}.`,
      todo: "Check the line's limit against the contract: the export bills usage against the limit in force at the period's end; re-run `sluice billing export` after the worker's next reconciliation.",
    };
  }
  if (d.degraded > 0) {
    return {
      ...base,
      cause: "degraded",
      why: `${direction} ${n(d.degraded)} decisions of ${d.tenant} passed degraded (the store could not be asked), so they are in the usage and not in the counter.`,
      todo: "Bill the export's figure (those requests did pass); look at the Redis errors panel on Dashboards for the outage.",
    };
  }
  return {
    ...base,
    cause: "unknown",
    why: `${direction} No publish, rollback or degraded decision in this period explains it.`,
    todo: "Look at the worker's log for rollup errors (\"quota counters differ\") and at the Dashboards' Redis errors; the export bills quota usage, the figure of the decisions that passed.",
  };
}

/** The differences of `month`'s quotas (the month itself and its days) at the worker's last reconciliation. */
export async function quotaDrift(db: Db, month: string, { nowMs }: { nowMs: number }): Promise<PeriodDrift> {
  const run = await readJobRun(db, "reconcile");
  if (!run) return { checkedAtMs: null, checked: 0, differences: [] };
  const mine = run.result.differences.filter((d) => d.period === month || d.period.startsWith(`${month}-`));
  if (mine.length === 0) return { checkedAtMs: run.lastRunAtMs, checked: run.result.checked, differences: [] };
  const versions = await new PolicyHistory(db).load();
  const rows = await db.policyVersion.findMany({ where: { rolledBackFrom: { not: null } }, select: { version: true, rolledBackFrom: true } });
  const rollbacks = new Map(rows.map((r) => [r.version, r.rolledBackFrom!]));
  return { checkedAtMs: run.lastRunAtMs, checked: run.result.checked, differences: mine.map((d) => explainDrift(d, versions, rollbacks, nowMs)) };
}
