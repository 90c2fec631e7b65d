/**
 * Quota threshold notifications, step 1 of 2: find what to notify (docs/billing-periods.md,
 * "Threshold notifications"). Reads every tenant's quota counters from Redis (the counters that
 * decide, as lib/jobs/reconcile.ts does), builds each tenant's usage answer
 * (lib/policy/tenant-usage-answer.ts: the tenant's own periods, plan changes, thresholds) and
 * inserts one QuotaNotification row per threshold crossed — and one `recovered` row when a new
 * period starts or a raised quota brings the tenant back under what it was warned about.
 *
 * Exactly once: a row's id (its primary key) is a hash of (tenant, quota, period, kind, threshold,
 * limit), and rows are inserted with ON CONFLICT DO NOTHING; so any number of workers,
 * running at the same time or restarted half-way, create each notification once. Delivery
 * (lib/jobs/quota-deliver.ts) sends the row's event; its id never changes.
 */
import { createHash } from "node:crypto";
import type { Db } from "../db/client";
import type { CompiledPolicy } from "../policy/compiled";
import { buildUsageAnswer, crossed, usageReadPlan, type UsageQuotaRow } from "../policy/tenant-usage-answer";
import { redisPrefix } from "../redis/keys";
import type { RedisLike } from "../redis/usage";
import { readLivePolicy } from "../services/policy/draft-view";
import { RETRY_WINDOW_MS } from "../services/billing/quota-notifications";

/** Tenants whose counters one Redis pipeline reads. */
const BATCH = 500;

export type NotificationKind = "threshold" | "recovered";

export interface NotificationDraft {
  id: string;
  tenant: string;
  quotaId: string;
  period: string;
  kind: NotificationKind;
  /** Percent of the quota; 0 for `recovered`. */
  threshold: number;
  used: number;
  limit: number;
  /** The CloudEvent's JSON text, sent as is on every attempt. */
  event: string;
}

export const EVENT_TYPES: Record<NotificationKind, string> = {
  threshold: "dev.sluice.quota.threshold_crossed.v1",
  recovered: "dev.sluice.quota.recovered.v1",
};

/** The notification's id, and its event's: the same inputs, the same id, on every worker. */
export function notificationId(tenant: string, quotaId: string, period: string, kind: NotificationKind, threshold: number, limit: number): string {
  return createHash("sha256").update([tenant, quotaId, period, kind, threshold, limit].join("\u0000")).digest("hex").slice(0, 32);
}

/** One notification with its CloudEvents 1.0 event (docs/billing-periods.md lists the fields). */
export function draftNotification(tenant: string, q: UsageQuotaRow, kind: NotificationKind, threshold: number, nowMs: number): NotificationDraft {
  const id = notificationId(tenant, q.quotaId, q.periodLabel, kind, threshold, q.limit);
  const event = {
    specversion: "1.0",
    id,
    source: "/sluice/quotas",
    type: EVENT_TYPES[kind],
    subject: `tenants/${tenant}/quotas/${q.quotaId}`,
    time: new Date(nowMs).toISOString(),
    datacontenttype: "application/json",
    data: {
      tenant,
      quotaId: q.quotaId,
      quota: q.name,
      operation: q.operation,
      period: q.period,
      periodLabel: q.periodLabel,
      periodStart: q.periodStart,
      periodEnd: q.periodEnd,
      ...(kind === "threshold" ? { threshold } : {}),
      used: q.used,
      limit: q.limit,
      remaining: q.remaining,
    },
  };
  return { id, tenant, quotaId: q.quotaId, period: q.periodLabel, kind, threshold, used: q.used, limit: q.limit, event: JSON.stringify(event) };
}

interface LastWarning {
  period: string;
  limit: number;
  threshold: number;
}

/**
 * What one tenant's quota calls for now: every threshold crossed, plus `recovered` when the last
 * warning was in another period, or in this one at a lower limit that `used` no longer reaches.
 * Pure (the detection job and its test share it).
 */
export function notificationsFor(tenant: string, q: UsageQuotaRow, last: LastWarning | undefined, nowMs: number): NotificationDraft[] {
  const out: NotificationDraft[] = [];
  if (last) {
    const newPeriod = last.period !== q.periodLabel;
    const raised = !newPeriod && q.limit > last.limit && !crossed(q.used, q.limit, last.threshold);
    if (newPeriod || raised) out.push(draftNotification(tenant, q, "recovered", 0, nowMs));
  }
  for (const t of q.thresholdsCrossed) out.push(draftNotification(tenant, q, "threshold", t, nowMs));
  return out;
}

/**
 * The newest warning of each tenant × quota that no `recovered` has answered yet: the newest row,
 * if it is a threshold one (at one instant a threshold row outranks a recovered one, and a higher
 * threshold a lower one).
 */
async function lastWarnings(db: Db): Promise<Map<string, LastWarning>> {
  const rows = await db.$queryRawUnsafe<{ tenant: string; quotaId: string; period: string; limit: bigint; threshold: number; kind: string }[]>(
    `SELECT DISTINCT ON ("tenant", "quotaId") "tenant", "quotaId", "period", "limit", "threshold", "kind"
       FROM "QuotaNotification"
      ORDER BY "tenant", "quotaId", "createdAt" DESC, ("kind" = 'threshold') DESC, "threshold" DESC`,
  );
  return new Map(rows.filter((r) => r.kind === "threshold").map((r) => [`${r.tenant}\u0000${r.quotaId}`, { period: r.period, limit: Number(r.limit), threshold: r.threshold }]));
}

/** Reads the counters of `slugs` (one MGET each, in one pipeline: a tenant's counters are one slot). */
async function readCounters(redis: RedisLike, doc: CompiledPolicy, slugs: string[], nowMs: number, prefix: string) {
  const plans = slugs.map((slug) => usageReadPlan(doc, slug, nowMs, prefix)).filter((p) => p !== null && p.quotas.length > 0);
  const pipeline = redis.pipeline();
  const keyLists = plans.map((p) => p!.quotas.flatMap((q) => (q.carriedKey ? [q.counterKey, q.carriedKey] : [q.counterKey])));
  for (const keys of keyLists) pipeline.mget(...keys);
  const results = (await pipeline.exec()) ?? [];
  return plans.map((plan, i) => {
    const [error, values] = results[i] ?? [new Error("no reply"), null];
    if (error) throw error;
    const list = values as (string | null)[];
    return { plan: plan!, counters: new Map(keyLists[i]!.map((k, j) => [k, Number(list[j] ?? 0) || 0])) };
  });
}

/** One pass: inserts every notification due at `nowMs` that does not exist yet; returns how many it created. */
export async function detectQuotaNotifications(deps: { db: Db; redis: RedisLike; prefix?: string }, { nowMs }: { nowMs: number }): Promise<{ created: number; tenants: number }> {
  const live = await readLivePolicy(deps.db);
  if (!live) return { created: 0, tenants: 0 };
  const prefix = deps.prefix ?? redisPrefix();
  const last = await lastWarnings(deps.db);
  const slugs = Object.keys(live.tenants).sort();
  let created = 0;
  for (let i = 0; i < slugs.length; i += BATCH) {
    const drafts: NotificationDraft[] = [];
    for (const { plan, counters } of await readCounters(deps.redis, live, slugs.slice(i, i + BATCH), nowMs, prefix)) {
      const answer = buildUsageAnswer(live, plan, { counters }, nowMs);
      for (const q of answer.quotas) drafts.push(...notificationsFor(plan.tenant, q, last.get(`${plan.tenant}\u0000${q.quotaId}`), nowMs));
    }
    if (drafts.length === 0) continue;
    const result = await deps.db.quotaNotification.createMany({
      data: drafts.map((d) => ({ ...d, id: `ntf_${d.id}`, used: BigInt(d.used), limit: BigInt(d.limit), createdAt: new Date(nowMs), nextAttemptAt: new Date(nowMs), retryUntil: new Date(nowMs + RETRY_WINDOW_MS) })),
      skipDuplicates: true,
    });
    created += result.count;
  }
  return { created, tenants: slugs.length };
}
