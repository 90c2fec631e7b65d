/**
 * Alerts, evaluated by the worker every minute over the drained rollups, by the rules edited on the
 * Dashboards page (lib/services/observe/alert-rules.ts: threshold, window and webhook; the defaults below):
 *  - `deny_share`: the 429 share of a tier or tenant over the last 5 complete minutes (the rule's
 *    window) rising above its trailing baseline (the 60 minutes before): share > max(5 % (the rule's
 *    threshold), 2 × baseline, baseline + 10 points), with at least 20 decisions in the window. It counts 429s only (the reasons
 *    rate_limited, quota_exhausted, concurrency_limited, cost_exceeds_limit, as the decision
 *    servers record them): a suspended tenant's 403s, unknown keys' 401s and fail-closed 503s are
 *    not a limit denying, and a share already at 100 % in the baseline has a threshold above 100 %;
 *  - `quota_80` / `quota_100`: a monthly quota at 80 % (the quota rule's threshold) / 100 % of its limit;
 *  - `redis_errors`: store errors + timeouts ≥ 1 % (the rule's threshold) of decisions in its window
 *    (5 minutes), or any breaker opening;
 *  - `accuracy_divergence`: over the last 15 minutes, a limit's admissions diverge from the accuracy
 *    meter's exact log (lib/services/justify/accuracy-report.ts) by more than the policy's tolerance (the
 *    requirements block; default 5 %), with at least 100 admissions by the log.
 * An alert opens when its condition starts and resolves when it stops (a deny-share alert: when the
 * share falls to the threshold it opened with, see denyShareJudge); it names the policy version
 * published before it began (the likely cause) and links to that version's own diff.
 */
import { createHash } from "node:crypto";
import type { Db } from "../db/client";
import { DENIAL_REASON_PREFIX } from "../db/denial-repo";
import { pgTs } from "../db/usage-repo";
import { REASONS_429 } from "../policy/denial-reasons";
import { activeSilences } from "../services/observe/alert-actions";
import { defaultAlertRules, readAlertRules, type AlertRule, type AlertRuleKind } from "../services/observe/alert-rules";
import { deliverWebhook } from "../services/observe/alert-webhook";
import { accuracyByLimit } from "../services/justify/accuracy-report";
import { getQuotas } from "../services/observe/usage-query";

export const ALERT_BASELINE_MS = 60 * 60_000;
export const ALERT_MIN_DECISIONS = 20;
/** The rollout guard's store-error guardrail: errors and timeouts at least this share of decisions (the default of the editable `redis_errors` alert rule, lib/services/observe/alert-rules.ts). */
export const REDIS_ERROR_SHARE = 0.01;

export type AlertKind = "deny_share" | "quota_80" | "quota_100" | "redis_errors" | "accuracy_divergence";
export const ACCURACY_ALERT_WINDOW_MS = 15 * 60_000;
export const ACCURACY_ALERT_MIN_ADMISSIONS = 100;

export interface Condition {
  kind: AlertKind;
  subject: string;
  value: number;
  threshold: number;
  message: string;
}

/** The deny-share rule, pure: fires when the window's share is abnormal against the baseline (`floor`: the rule's threshold). */
export function denyShareThreshold(baselineShare: number, floor = 0.05): number {
  return Math.max(floor, 2 * baselineShare, baselineShare + 0.1);
}

function pct(x: number): string {
  return `${(x * 100).toFixed(1)}%`;
}

/** Decisions and 429s per tenant and per tier total (`*:<tier>`) over [fromMs, toMs), from the minute rollups. */
async function shares(db: Db, fromMs: number, toMs: number): Promise<Map<string, { total: number; denied: number }>> {
  const totals = await db.$queryRawUnsafe<{ tenant: string; total: bigint }[]>(
    `SELECT "tenant", sum("count")::bigint AS total
       FROM "UsageRollup"
      WHERE "granularity" = 'minute' AND "bucketStart" >= $1::timestamp(3) AND "bucketStart" < $2::timestamp(3)
        AND "keyPrefix" = '' AND "tenant" NOT IN ('', '_')
      GROUP BY 1`,
    pgTs(fromMs),
    pgTs(toMs),
  );
  // The 429s: reason rows (lib/db/denial-repo.ts), per tenant and tier.
  const denials = await db.$queryRawUnsafe<{ tenant: string; tier: string; n: bigint }[]>(
    `SELECT substr(split_part("operation", '|', 1), $3::int) AS tenant, "tier", sum("count")::bigint AS n
       FROM "UsageRollup"
      WHERE "tenant" = '' AND "granularity" = 'minute' AND "bucketStart" >= $1::timestamp(3) AND "bucketStart" < $2::timestamp(3)
        AND starts_with("operation", $4) AND split_part("operation", '|', 2) = ANY($5::text[])
      GROUP BY 1, 2`,
    pgTs(fromMs),
    pgTs(toMs),
    DENIAL_REASON_PREFIX.length + 1,
    DENIAL_REASON_PREFIX,
    [...REASONS_429],
  );
  const out = new Map(totals.map((r) => [r.tenant, { total: Number(r.total), denied: 0 }]));
  for (const d of denials) {
    for (const subject of [d.tenant, `*:${d.tier}`]) {
      const s = out.get(subject);
      if (s) s.denied += Number(d.n);
    }
  }
  return out;
}

/**
 * The threshold a deny-share subject is judged against: while an alert on it is open, the one it
 * opened with. The baseline is the hour before the window, so a lasting incident soon becomes its
 * own baseline (60 % denied for an hour gives a threshold over 100 %): re-judging an open alert
 * against that resolved it while its share was still 58–62 %. An alert stays open while the share
 * it watches is above the threshold it opened with.
 */
export function denyShareJudge(baselineShare: number, openThreshold: number | undefined, floor?: number): number {
  return openThreshold ?? denyShareThreshold(baselineShare, floor);
}

/** The rule an alert kind is judged and delivered by. */
function ruleOf(kind: AlertKind): AlertRuleKind | null {
  return kind === "deny_share" || kind === "redis_errors" ? kind : kind === "quota_80" || kind === "quota_100" ? "quota" : null;
}

/** `openThresholds`: `<kind>|<subject>` → threshold of the alerts open now (see denyShareJudge). */
export async function currentConditions(
  db: Db,
  nowMs: number,
  openThresholds: ReadonlyMap<string, number> = new Map(),
  rules: Record<AlertRuleKind, AlertRule> = defaultAlertRules(),
): Promise<Condition[]> {
  const windowEnd = Math.floor(nowMs / 60_000) * 60_000;
  const denyWindowMs = (rules.deny_share.windowMinutes ?? 5) * 60_000;
  const windowStart = windowEnd - denyWindowMs;
  const window = await shares(db, windowStart, windowEnd);
  const baseline = await shares(db, windowStart - ALERT_BASELINE_MS, windowStart);
  const out: Condition[] = [];
  for (const [tenant, w] of window) {
    if (w.total < ALERT_MIN_DECISIONS) continue;
    const b = baseline.get(tenant);
    const baseShare = b && b.total > 0 ? b.denied / b.total : 0;
    const share = w.denied / w.total;
    const isTier = tenant.startsWith("*:");
    const subject = isTier ? `tier:${tenant.slice(2)}` : `tenant:${tenant}`;
    const threshold = denyShareJudge(baseShare, openThresholds.get(`deny_share|${subject}`), rules.deny_share.threshold);
    if (share <= threshold) continue;
    out.push({
      kind: "deny_share",
      subject,
      value: share,
      threshold,
      message: `429 share of ${isTier ? "tier" : "tenant"} ${isTier ? tenant.slice(2) : tenant} is ${pct(share)} over the last ${denyWindowMs / 60_000} min (baseline ${pct(baseShare)}, threshold ${pct(threshold)})`,
    });
  }

  const month = new Date(nowMs).toISOString().slice(0, 7);
  for (const q of (await getQuotas(db, { period: month, nowMs })).quotas) {
    // A retired quota enforces nothing any more: no alert on it.
    if (q.retired) continue;
    if (q.usedShare >= 1) out.push({ kind: "quota_100", subject: `${q.tenant}/${q.quotaId}`, value: q.usedShare, threshold: 1, message: `${q.tenant} used ${pct(q.usedShare)} of its ${q.operation} monthly quota (${q.used}/${q.limit})` });
    else if (q.usedShare >= rules.quota.threshold) out.push({ kind: "quota_80", subject: `${q.tenant}/${q.quotaId}`, value: q.usedShare, threshold: rules.quota.threshold, message: `${q.tenant} used ${pct(q.usedShare)} of its ${q.operation} monthly quota (${q.used}/${q.limit})` });
  }

  const errorWindowMinutes = rules.redis_errors.windowMinutes ?? 5;
  const [errors] = await db.$queryRawUnsafe<{ errors: bigint; breaker: bigint; decisions: bigint }[]>(
    `SELECT coalesce(sum("count") FILTER (WHERE "tenant" = '' AND "operation" = 'error' AND "outcome" IN ('redis_error', 'redis_timeout')), 0)::bigint AS errors,
            coalesce(sum("count") FILTER (WHERE "tenant" = '' AND "operation" = 'error' AND "outcome" = 'breaker_open'), 0)::bigint AS breaker,
            coalesce(sum("count") FILTER (WHERE "tenant" LIKE '*:%'), 0)::bigint AS decisions
       FROM "UsageRollup" WHERE "granularity" = 'minute' AND "bucketStart" >= $1::timestamp(3) AND "bucketStart" < $2::timestamp(3)`,
    pgTs(windowEnd - errorWindowMinutes * 60_000),
    pgTs(windowEnd),
  );
  const errorCount = Number(errors?.errors ?? 0);
  const decisions = Number(errors?.decisions ?? 0);
  const breaker = Number(errors?.breaker ?? 0);
  const rate = decisions > 0 ? errorCount / decisions : errorCount > 0 ? 1 : 0;
  if ((errorCount > 0 && rate >= rules.redis_errors.threshold) || breaker > 0) {
    out.push({ kind: "redis_errors", subject: "redis", value: rate, threshold: rules.redis_errors.threshold, message: `Redis errors and timeouts: ${errorCount} in ${errorWindowMinutes} min (${pct(rate)} of decisions), breaker openings: ${breaker}` });
  }
  for (const a of await accuracyByLimit(db, { fromMs: windowEnd - ACCURACY_ALERT_WINDOW_MS, toMs: windowEnd, granularity: "minute" })) {
    if (a.tolerance === null || a.divergence === null || a.exactAdmitted < ACCURACY_ALERT_MIN_ADMISSIONS || a.divergence <= a.tolerance) continue;
    out.push({
      kind: "accuracy_divergence",
      subject: `limit:${a.limit}`,
      value: a.divergence,
      threshold: a.tolerance,
      message: `${a.limit} admitted ${a.limitAdmitted} sampled requests in 15 min where an exact sliding-window log admits ${a.exactAdmitted} (${pct(a.divergence)} apart; tolerance ${pct(a.tolerance)})`,
    });
  }
  return out;
}

export interface OpenedAlert {
  id: string;
  kind: AlertKind;
  subject: string;
  message: string;
  policyVersion: number | null;
}

/** Opens, refreshes and resolves alert events; delivers newly opened ones to the webhook if set. */
export async function evaluateAlerts(
  db: Db,
  { nowMs, webhookUrl, allowPrivateWebhooks = false }: { nowMs: number; webhookUrl?: string; allowPrivateWebhooks?: boolean },
): Promise<OpenedAlert[]> {
  // A rollout's guardrail alert is the rollout guard's (lib/jobs/rollout-guard.ts), not a condition of this evaluation.
  const open = await db.alertEvent.findMany({ where: { resolvedAt: null, kind: { not: "rollout_guardrail" } } });
  const rules = await readAlertRules(db);
  const conditions = await currentConditions(db, nowMs, new Map(open.map((a) => [`${a.kind}|${a.subject}`, a.threshold])), rules);
  const now = new Date(nowMs);
  const opened: OpenedAlert[] = [];
  const seen = new Set<string>();
  for (const c of conditions) {
    const key = `${c.kind}|${c.subject}`;
    seen.add(key);
    const existing = open.find((a) => `${a.kind}|${a.subject}` === key);
    if (existing) {
      await db.alertEvent.update({ where: { id: existing.id }, data: { lastSeenAt: now, value: c.value, threshold: c.threshold, message: c.message } });
      continue;
    }
    const startedAt = new Date(Math.floor(nowMs / 60_000) * 60_000);
    const before = await db.policyVersion.findFirst({ where: { createdAt: { lte: startedAt } }, orderBy: { version: "desc" }, select: { version: true } });
    const id = `al_${createHash("sha256").update(`${key}|${startedAt.getTime()}`).digest("hex").slice(0, 20)}`;
    const created = await db.alertEvent.upsert({
      where: { id },
      create: { id, kind: c.kind, subject: c.subject, startedAt, lastSeenAt: now, value: c.value, threshold: c.threshold, policyVersion: before?.version ?? null, message: c.message },
      update: { lastSeenAt: now, resolvedAt: null },
    });
    opened.push({ id: created.id, kind: c.kind, subject: c.subject, message: c.message, policyVersion: created.policyVersion });
  }
  for (const a of open) {
    if (!seen.has(`${a.kind}|${a.subject}`)) await db.alertEvent.update({ where: { id: a.id }, data: { resolvedAt: now } });
  }
  // Each alert goes to its rule's webhook, else the worker's.
  const destination = (kind: AlertKind) => {
    const rule = ruleOf(kind);
    return (rule ? rules[rule].webhookUrl : null) ?? webhookUrl;
  };
  if (opened.some((a) => destination(a.kind))) {
    const silences = await activeSilences(db, nowMs);
    for (const a of opened) {
      const url = destination(a.kind);
      if (!url) continue;
      const silence = silences.get(`${a.kind}|${a.subject}`);
      if (silence) {
        await db.alertEvent.update({ where: { id: a.id }, data: { webhookStatus: `silenced until ${silence.until.toISOString()}` } });
        continue;
      }
      const result = await deliverWebhook(url, { type: "sluice.alert.opened", ...a, policyDiff: a.policyVersion ? `/policy?version=${a.policyVersion}` : null }, { allowPrivate: allowPrivateWebhooks });
      await db.alertEvent.update({ where: { id: a.id }, data: { webhookStatus: result.ok ? `delivered (${result.attempts})` : `failed: ${result.error ?? "unknown"}` } });
    }
  }
  return opened;
}
