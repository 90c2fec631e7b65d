/**
 * The rollout guard (docs/control-plane.md#guarded-rollout), run by the worker on every tick:
 *
 * 1. Every region's Redis (SLUICE_REGIONS; without it the worker's own) holds the running rollout's
 *    routing (a Redis that restarted empty, missed a write, or holds a routing written by an older
 *    step, is rewritten from PostgreSQL: the rollout resumes where it was), and none holds the
 *    routing of a rollout that has ended (a region that missed the end is sent back to the live
 *    version). A region that does not answer is skipped and tried again on the next pass.
 * 2. The guardrails, once per drained minute: over the newest minute the rollup has closed, the
 *    cohort's 429 share (429s only, as the dashboards count them: lib/db/rollout-usage-repo.ts)
 *    against the control's (the other tenants), on the same operations (the control counts only
 *    the operations the cohort used) and the same minute, more than
 *    `maxDenyShareIncrease` points above; and those of ./rollout-guardrails.ts (any one cohort
 *    tenant's jump, store errors, reject-path latency). Any breach → pause and, unless the rollout
 *    is pause-only, roll the cohort back to the live version; raise an alert (kind
 *    `rollout_guardrail`) that names the rollout, the step, each guardrail broken and the tenants
 *    that tripped it.
 * 3. The bake time: a running step whose bake time has passed with the guardrail holding advances
 *    (the last step publishes the new version to everyone).
 *
 * Time is an argument (`nowMs`), so tests drive it with a test clock and no sleeps. The moves take
 * the policy lock, so two workers never both move one rollout.
 */
import { createHash } from "node:crypto";
import type { Db } from "../db/client";
import { lockPolicy } from "../db/policy-repo";
import { findActiveRollout, type RolloutRecord } from "../db/rollout-repo";
import { latestPolicyVersion } from "../db/policy-repo";
import { findPendingApproval } from "../db/approval-repo";
import { minuteUsageByTenant } from "../db/rollout-usage-repo";
import type { RedisLike } from "../redis/policy";
import { regionTargets, withTimeout } from "../redis/regions";
import { clearRolloutRouting, readRolloutRouting, writeRolloutRouting } from "../redis/rollout";
import { deliverWebhook } from "../services/observe/alert-webhook";
import { compareCohort } from "../services/rollout/compare-cohort";
import { cohortOf, describeRollout, type GuardCheck } from "../services/rollout/rollout-view";
import { advance, candidateOf, pause, routingOf, stop } from "../services/rollout/transitions";
import { DRAIN_GRACE_MS } from "./rollup";
import { judgeGuardrails, systemFigures, tenantBaseline, type Breach } from "./rollout-guardrails";

const MINUTE_MS = 60_000;
export const ROLLOUT_ALERT_KIND = "rollout_guardrail";

export interface GuardDeps {
  db: Db;
  redis: RedisLike | null;
  webhookUrl?: string;
  allowPrivateWebhooks?: boolean;
}

export interface GuardResult {
  rollout: string;
  /** What the guard did this pass. */
  action: "none" | "rerouted" | "advanced" | "completed" | "paused" | "rolled-back" | "awaiting-approval";
  check: GuardCheck | null;
}

/** The newest minute the rollup has drained by `nowMs` (its start, ms). */
export function newestDrainedMinute(nowMs: number): number {
  return Math.floor((nowMs - DRAIN_GRACE_MS) / MINUTE_MS) * MINUTE_MS - MINUTE_MS;
}

/** Every guardrail over one drained minute: the cohort against the control, then ./rollout-guardrails.ts. */
async function checkMinute(db: Db, r: RolloutRecord, minuteMs: number, nowMs: number): Promise<GuardCheck> {
  const g = r.guardrails;
  const cmp = compareCohort(await minuteUsageByTenant(db, minuteMs), cohortOf(r), g.maxDenyShareIncrease, g.minDecisions);
  const breaches: Breach[] = [];
  if (cmp.verdict === "breached") {
    const over = cmp.tripped.length > 0 ? `; tenants over it: ${cmp.tripped.slice(0, 20).join(", ")}${cmp.tripped.length > 20 ? ", …" : ""}` : "";
    const message = `429 share at most ${g.maxDenyShareIncrease} points above the control: cohort ${(cmp.cohort.share * 100).toFixed(1)}% of ${cmp.cohort.decisions} decisions, control ${(cmp.control.share * 100).toFixed(1)}% of ${cmp.control.decisions} (+${cmp.marginPoints.toFixed(1)} points)${over}`;
    breaches.push({ guardrail: "cohort_429_share", message, tenants: cmp.tripped });
  }
  const requiredRejectP95Ms = candidateOf(r).requirements?.rejectP95Ms ?? null;
  breaches.push(
    ...judgeGuardrails({ perTenant: cmp.perTenant, baseline: await tenantBaseline(db, r.createdAt.getTime()), controlShare: cmp.control.share, system: await systemFigures(db, minuteMs), guardrails: g, requiredRejectP95Ms }),
  );
  return {
    at: new Date(nowMs).toISOString(),
    minute: new Date(minuteMs).toISOString(),
    cohort: cmp.cohort,
    control: cmp.control,
    marginPoints: cmp.marginPoints,
    verdict: breaches.length > 0 ? "breached" : cmp.verdict,
    breaches,
  };
}

/**
 * Rewrites the routing in every region whose Redis lacks it or holds another step's (a restart, a
 * missed write); with no rollout running, sends a region that still routes an ended rollout back to
 * the live version (it missed the end). True when some region was rewritten. A region that does not
 * answer is left for the next pass (region-sync reports it).
 */
async function ensureRouting(db: Db, home: RedisLike, r: RolloutRecord | null): Promise<boolean> {
  const want = r ? routingOf(r) : null;
  const results = await Promise.allSettled(
    regionTargets(home).map(async ({ name, redis }) => {
      const have = await withTimeout(readRolloutRouting(redis), name);
      if (want === null) {
        if (have.status !== "ok") return false;
        // Only a rollout that ended: one starting now writes its routing before its row commits.
        const row = await db.rollout.findUnique({ where: { id: have.routing.id }, select: { endedAt: true } });
        if (!row?.endedAt) return false;
        const live = await latestPolicyVersion(db);
        await withTimeout(clearRolloutRouting(redis, live?.version ?? have.routing.liveVersion), name);
        return true;
      }
      if (have.status === "ok" && JSON.stringify(have.routing) === JSON.stringify(want)) return false;
      await withTimeout(writeRolloutRouting(redis, candidateOf(r!), want), name);
      return true;
    }),
  );
  return results.some((x) => x.status === "fulfilled" && x.value);
}

/** One pass of the guard; null when no rollout is running or paused. */
export async function guardRollout(deps: GuardDeps, { nowMs }: { nowMs: number }): Promise<GuardResult | null> {
  const active = await findActiveRollout(deps.db);
  if (!active) {
    if (deps.redis) await ensureRouting(deps.db, deps.redis, null);
    return null;
  }
  const rerouted = deps.redis ? await ensureRouting(deps.db, deps.redis, active) : false;
  const idle: GuardResult = { rollout: active.id, action: rerouted ? "rerouted" : "none", check: null };
  if (active.state !== "running") return idle;

  // The guardrail, on the newest drained minute the step covers, once per minute.
  const minuteMs = newestDrainedMinute(nowMs);
  const stepMinuteMs = Math.floor(active.stepStartedAt.getTime() / MINUTE_MS) * MINUTE_MS;
  const last = active.lastCheck as GuardCheck | null;
  let check: GuardCheck | null = null;
  if (minuteMs >= stepMinuteMs && last?.minute !== new Date(minuteMs).toISOString()) {
    check = await checkMinute(deps.db, active, minuteMs, nowMs);
    await deps.db.rollout.update({ where: { id: active.id }, data: { lastCheck: JSON.parse(JSON.stringify(check)) } });
  }

  if (check?.verdict === "breached") return { rollout: active.id, action: await breach(deps, active, check, nowMs), check };
  const bakeMs = active.steps[active.step]!.bakeMs;
  if (nowMs - active.stepStartedAt.getTime() < bakeMs) return { ...idle, check };
  // Already waiting for a second person to approve the next step: nothing to do until they do.
  const waiting = await findPendingApproval(deps.db);
  if (waiting?.kind === "rollout-step" && waiting.rolloutId === active.id) return { ...idle, check };
  const moved = await deps.db.$transaction(
    async (tx) => {
      await lockPolicy(tx);
      const r = await findActiveRollout(tx);
      if (!r || r.id !== active.id || r.state !== "running" || r.step !== active.step) return null;
      // A step beyond the approval rule's blast radius is asked for on the author's behalf.
      const caller = { actor: r.author, role: null };
      return advance(tx, deps.redis, r, { actor: `rollout:${r.id}`, nowMs, caller }, `bake time of step ${r.step + 1} elapsed with the guardrails holding`);
    },
    { maxWait: 10_000, timeout: 60_000 },
  );
  if (!moved) return { ...idle, check };
  if (moved.approval) return { rollout: active.id, action: "awaiting-approval", check };
  return { rollout: active.id, action: moved.rollout.state === "completed" ? "completed" : "advanced", check };
}

async function breach(deps: GuardDeps, active: RolloutRecord, check: GuardCheck, nowMs: number): Promise<GuardResult["action"]> {
  const step = describeRollout(active).stepLabel;
  const what = active.guardrails.pauseOnly ? "paused (pause-only)" : `paused and rolled the cohort back to v${active.liveVersion}`;
  const broken = (check.breaches ?? []).map((b) => `guardrail "${b.message}"`).join("; ");
  const reason = `${broken} breached at ${step} in minute ${check.minute}; ${what}`;
  const moved = await deps.db.$transaction(
    async (tx) => {
      await lockPolicy(tx);
      const r = await findActiveRollout(tx);
      if (!r || r.id !== active.id || r.state !== "running") return null;
      const meta = { actor: `rollout:${r.id}`, nowMs };
      return active.guardrails.pauseOnly ? pause(tx, r, meta, reason) : stop(tx, deps.redis, r, meta, "rolled-back", reason);
    },
    { maxWait: 10_000, timeout: 60_000 },
  );
  if (!moved) return "none";
  await raiseAlert(deps, active, check, `Rollout ${active.id} (v${active.candidateVersion}): ${reason}`, nowMs);
  return moved.state === "paused" ? "paused" : "rolled-back";
}

/** An alert in the alerts table (the Dashboards list it) and, when set, the alert webhook. */
async function raiseAlert(deps: GuardDeps, r: RolloutRecord, check: GuardCheck, message: string, nowMs: number): Promise<void> {
  const startedAt = new Date(Math.floor(nowMs / MINUTE_MS) * MINUTE_MS);
  const subject = `rollout:${r.id}`;
  const id = `al_${createHash("sha256").update(`${ROLLOUT_ALERT_KIND}|${subject}|${startedAt.getTime()}`).digest("hex").slice(0, 20)}`;
  const threshold = r.guardrails.maxDenyShareIncrease / 100;
  const value = check.marginPoints / 100;
  await deps.db.alertEvent.upsert({
    where: { id },
    create: { id, kind: ROLLOUT_ALERT_KIND, subject, startedAt, lastSeenAt: new Date(nowMs), value, threshold, policyVersion: r.candidateVersion, message },
    update: { lastSeenAt: new Date(nowMs), value, message },
  });
  if (!deps.webhookUrl) return;
  const result = await deliverWebhook(
    deps.webhookUrl,
    { type: "sluice.alert.opened", id, kind: ROLLOUT_ALERT_KIND, subject, message, policyVersion: r.candidateVersion, rollout: r.id, policyDiff: null },
    { allowPrivate: deps.allowPrivateWebhooks ?? false },
  );
  await deps.db.alertEvent.update({ where: { id }, data: { webhookStatus: result.ok ? `delivered (${result.attempts})` : `failed: ${result.error ?? "unknown"}` } });
}
