/**
 * `npm run worker`: the background jobs. Every tick (5 s) it drains closed usage minutes into
 * Postgres (from every region's Redis with SLUICE_REGIONS, lib/jobs/region-drain.ts); less often it closes billing periods, evaluates alerts, reconciles quota counters and
 * downsamples old minute rows. Any number of workers may run: each job takes its own Postgres
 * advisory lock, and the rollup is exactly-once on its own (lib/jobs/rollup.ts).
 *
 * Every tick it also guards the running rollout, if any (lib/jobs/rollout-guard.ts): its routing
 * in Redis, its guardrail on each newly drained minute, and its bake time.
 *
 * Beside that tick, every second, it checks that Redis still holds what the control plane published
 * and writes it back from Postgres when Redis lost it (lib/jobs/restore-published.ts); with
 * SLUICE_REGIONS it also brings every region's Redis that missed a write up to date
 * (lib/jobs/region-sync.ts, docs/regions.md).
 *
 * Single-node mode (SLUICE_MODE=single-node) has no Redis: the decision server writes its usage to
 * Postgres itself (lib/single-node/postgres-usage-sink.ts), so the worker runs only the Postgres
 * jobs (billing close, alerts, downsampling) and skips the Redis drain and quota reconciliation.
 */
import { pathToFileURL } from "node:url";
import { createDb, type Db } from "../lib/db/client";
import { env } from "../lib/env";
import { createLogger } from "../lib/log";
import { checkSingleNodeEnv, SingleNodeConfigError } from "../lib/single-node/config";
import { recordJobRun } from "../lib/db/job-runs";
import { closeDuePeriods } from "../lib/jobs/billing-close";
import { downsampleMinutes } from "../lib/jobs/downsample";
import { reconcileQuotas } from "../lib/jobs/reconcile";
import { drainEveryRegion } from "../lib/jobs/region-drain";
import { evaluateAlerts } from "../lib/jobs/alerts";
import { expireApiKeys } from "../lib/jobs/expire-api-keys";
import { guardRollout } from "../lib/jobs/rollout-guard";
import { deliverDueNotifications } from "../lib/jobs/quota-deliver";
import { detectQuotaNotifications } from "../lib/jobs/quota-notify";
import { RESTORE_CHECK_MS, restorePublishedState } from "../lib/jobs/restore-published";
import { newRebalanceMemory, rebalanceRegions } from "../lib/jobs/region-rebalance";
import { syncRegions } from "../lib/jobs/region-sync";
import { createRedisClient, type RedisClient } from "../lib/redis/client";
import { closeRegionClients, configuredRegions, regionTargets } from "../lib/redis/regions";

const TICK_MS = 5_000;
const EVERY: Record<"alerts" | "billing" | "reconcile" | "downsample" | "notify", number> = {
  alerts: 60_000,
  notify: 30_000,
  billing: 60_000,
  reconcile: 300_000,
  downsample: 600_000,
};

const logger = createLogger("worker");

function log(level: "info" | "warn" | "error", msg: string, extra: Record<string, unknown> = {}): void {
  logger[level](extra, msg);
}

export interface JobsDeps {
  db: Db;
  /** null in single-node mode: no Redis drain, no reconciliation against Redis counters. */
  redis: RedisClient | null;
  billingGraceMs: number;
  downsampleAfterMs: number;
  webhookUrl?: string;
  allowPrivateWebhooks: boolean;
  /** SLUICE_NOTIFY_ALLOW_PRIVATE: quota notification webhooks to private addresses (tests only). */
  allowPrivateNotify?: boolean;
}

/** The regions whose usage could not be drained on the last pass (logged when that changes). */
let undrained = "";

/** One pass of every job that is due (`last` remembers when each ran). */
export async function runJobs(deps: JobsDeps, nowMs: number, last: Partial<Record<keyof typeof EVERY, number>> = {}): Promise<void> {
  if (deps.redis) {
    const drained = await drainEveryRegion(deps.db, deps.redis, { nowMs });
    const missed: string[] = [];
    for (const [region, d] of drained) {
      if (d.status !== "drained") missed.push(`${region}: ${d.error}`);
      else if (d.slices > 0 || d.alreadyDrained > 0) log("info", "rollup", { region, ...d });
    }
    const summary = missed.join("; ");
    if (summary !== undrained) log(missed.length > 0 ? "error" : "info", missed.length > 0 ? "usage not drained from some regions; it stays in their Redis and is drained once they answer" : "usage drained from every region again", missed.length > 0 ? { regions: missed } : {});
    undrained = summary;
  }
  // Every tick: a rotated key stops working at most one tick after its overlap ends.
  const expired = await expireApiKeys({ db: deps.db, redis: deps.redis }, { nowMs });
  if (expired.length > 0) log("info", "API keys expired and revoked", { keys: expired });
  const due = (job: keyof typeof EVERY) => {
    if ((last[job] ?? 0) + EVERY[job] > nowMs) return false;
    last[job] = nowMs;
    return true;
  };
  if (due("billing")) {
    const closed = await closeDuePeriods({ db: deps.db }, { nowMs, graceMs: deps.billingGraceMs });
    if (closed.length > 0) log("info", "billing periods closed", { closed });
    // The Billing page says when the close last ran (a month past its close still open says why).
    await recordJobRun(deps.db, "billing-close", { nowMs, result: { closed } });
  }
  // Every tick, so a breach is acted on as soon as the rollup has drained its minute (once per minute).
  const guarded = await guardRollout({ db: deps.db, redis: deps.redis, webhookUrl: deps.webhookUrl, allowPrivateWebhooks: deps.allowPrivateWebhooks }, { nowMs });
  if (guarded && guarded.action !== "none") log(guarded.action === "rolled-back" || guarded.action === "paused" ? "warn" : "info", "rollout", { ...guarded });
  if (due("alerts")) {
    const opened = await evaluateAlerts(deps.db, { nowMs, webhookUrl: deps.webhookUrl, allowPrivateWebhooks: deps.allowPrivateWebhooks });
    if (opened.length > 0) log("warn", "alerts opened", { alerts: opened.map((a) => a.message) });
  }
  if (deps.redis && due("reconcile")) {
    // Only a real difference: not usage still in flight, not decisions that passed degraded (lib/jobs/reconcile.ts).
    // With regions, every region's counters against PostgreSQL, which counts them all (lib/jobs/region-drain.ts).
    const all = await reconcileQuotas(deps.db, configuredRegions().length > 0 ? regionTargets(deps.redis).map((t) => t.redis) : deps.redis, { nowMs });
    const diffs = all.filter((d) => d.real);
    if (diffs.length > 0) log("warn", "quota counters differ from quota usage beyond what is in flight or degraded", { diffs: diffs.slice(0, 20), count: diffs.length });
    // Shown on the Billing page, on the line and the period they concern (lib/services/billing/quota-drift.ts).
    const differences = diffs.map((d) => ({ tenant: d.tenant, quotaId: d.quotaId, period: d.period, redis: d.redis, expected: d.postgres + d.pending, degraded: d.degraded }));
    await recordJobRun(deps.db, "reconcile", { nowMs, result: { differences, checked: all.length } });
  }
  if (deps.redis && due("notify")) {
    const found = await detectQuotaNotifications({ db: deps.db, redis: deps.redis }, { nowMs });
    if (found.created > 0) log("info", "quota notifications", { created: found.created });
  }
  // Every tick: pending notifications, due retries, re-sends (single-node mode has no counters to
  // watch, but re-sends and retries of earlier rows still go out).
  const sent = await deliverDueNotifications(deps.db, { nowMs, allowPrivate: deps.allowPrivateNotify ?? false });
  if (sent.delivered + sent.failed > 0) log(sent.failed > 0 ? "warn" : "info", "quota notifications sent", { ...sent });
  if (due("downsample")) {
    const deleted = await downsampleMinutes(deps.db, { nowMs, afterMs: deps.downsampleAfterMs });
    if (deleted > 0) log("info", "downsampled", { minuteRowsDeleted: deleted });
  }
}

/**
 * Every RESTORE_CHECK_MS, and at once whenever the Redis connection is (re)established: is the
 * published state still in Redis? If not, write it back from Postgres. Its own loop, so a long
 * rollup never delays a restore; failures are logged once per change of message and retried.
 */
async function restoreLoop(deps: { db: Db; redis: RedisClient }, stopped: () => boolean): Promise<void> {
  let lastError: string | null = null;
  let lastRegions = "";
  let wake: (() => void) | null = null;
  // A restarted Redis is back when the connection is: probe then, not up to a second later.
  const onReady = () => wake?.();
  deps.redis.on("ready", onReady);
  while (!stopped()) {
    try {
      const result = await restorePublishedState(deps, { nowMs: Date.now() });
      if (result.restoredVersion !== null) log("warn", "Redis had lost the published state; restored it from PostgreSQL", { ...result });
      lastError = null;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (message !== lastError) log("error", "restoring the published state failed; retrying every second", { error: message });
      lastError = message;
    }
    if (configuredRegions().length > 0) lastRegions = await regionPass(deps, lastRegions);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, RESTORE_CHECK_MS);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    wake = null;
  }
  deps.redis.off("ready", onReady);
}

/**
 * One catch-up pass over the regions (lib/jobs/region-sync.ts): a region brought up to date is
 * logged each time; an unreachable one when that changes. Returns what to compare next time.
 */
async function regionPass(deps: { db: Db; redis: RedisClient }, previous: string): Promise<string> {
  try {
    const results = await syncRegions(deps.db, regionTargets(deps.redis));
    for (const r of results) if (r.status === "caught-up") log("warn", `region ${r.region} was behind; wrote v${r.latestVersion} there`, { ...r });
    const down = results.filter((r) => r.status === "unreachable");
    const summary = down.map((r) => `${r.region}: ${r.error ?? ""}`).join("; ");
    if (summary !== previous && down.length > 0) log("error", "regions unreachable; they keep their last good policy, retrying every second", { regions: down });
    if (summary !== previous && down.length === 0 && previous !== "") log("info", "every region reachable again");
    return summary;
  } catch (error) {
    const message = `sync: ${error instanceof Error ? error.message : String(error)}`;
    if (message !== previous) log("error", "the region catch-up pass failed; retrying every second", { error: message });
    return message;
  }
}

/**
 * With SLUICE_REGIONS, every `everyMs`: the shares of `split` limits re-balanced from each region's
 * demand (lib/jobs/region-rebalance.ts). Its own loop; a failure is logged once per message.
 */
async function rebalanceLoop(deps: { db: Db; redis: RedisClient }, everyMs: number, stopped: () => boolean): Promise<void> {
  const memory = newRebalanceMemory();
  let lastProblem = "";
  while (!stopped()) {
    try {
      const result = await rebalanceRegions(deps.db, regionTargets(deps.redis), memory, { nowMs: Date.now() });
      const problem = result.missed.length > 0 ? `shares not written to ${result.missed.join(", ")}; no share grows until every region has them` : "";
      if (problem && problem !== lastProblem) log("warn", problem);
      lastProblem = problem;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (message !== lastProblem) log("error", "re-balancing the shares of split limits failed", { error: message });
      lastProblem = message;
    }
    const until = Date.now() + everyMs;
    while (!stopped() && Date.now() < until) await new Promise((r) => setTimeout(r, Math.min(250, until - Date.now())));
  }
}

async function main(): Promise<void> {
  const e = env();
  const singleNode = e.SLUICE_MODE === "single-node";
  if (singleNode) {
    // The worker runs beside the one decision server: only the database matters here.
    const problems = checkSingleNodeEnv({ ...e, SLUICE_INSTANCES: 1 }).problems;
    if (problems.length > 0) throw new SingleNodeConfigError(problems);
  }
  const db = createDb();
  const redis = singleNode
    ? null
    : createRedisClient({ url: e.REDIS_URL, clusterNodes: e.REDIS_CLUSTER_NODES, commandTimeoutMs: 5_000, name: "sluice-worker" });
  const deps: JobsDeps = {
    db,
    redis,
    billingGraceMs: e.BILLING_GRACE_MS,
    downsampleAfterMs: e.ROLLUP_DOWNSAMPLE_AFTER_MS,
    webhookUrl: e.ALERT_WEBHOOK_URL,
    allowPrivateWebhooks: e.ALERT_WEBHOOK_ALLOW_PRIVATE === "1",
    allowPrivateNotify: e.SLUICE_NOTIFY_ALLOW_PRIVATE === "1",
  };
  let stopping = false;
  let wake: (() => void) | null = null;
  const stop = () => {
    stopping = true;
    wake?.();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  log("info", "worker started", { tickMs: TICK_MS, mode: e.SLUICE_MODE, regions: e.SLUICE_REGIONS.map((r) => r.name) });
  if (singleNode) {
    log("info", "single-node mode: no Redis; the decision server writes usage to PostgreSQL itself, so the Redis usage drain and quota reconciliation are skipped; running billing close, alerts and downsampling");
  }
  const restoring = redis ? restoreLoop({ db, redis }, () => stopping) : Promise.resolve();
  const rebalancing = redis && e.SLUICE_REGIONS.length > 0 ? rebalanceLoop({ db, redis }, e.SLUICE_REGION_REBALANCE_MS, () => stopping) : Promise.resolve();
  const last: Partial<Record<keyof typeof EVERY, number>> = {};
  while (!stopping) {
    const started = Date.now();
    try {
      await runJobs(deps, started, last);
    } catch (error) {
      log("error", "job pass failed", { err: error });
    }
    const wait = Math.max(250, TICK_MS - (Date.now() - started));
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, wait);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
  log("info", "worker stopping");
  await restoring;
  await rebalancing;
  await redis?.quit().catch(() => undefined);
  await closeRegionClients();
  await db.$disconnect();
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((error: unknown) => {
    log("error", "worker crashed", { err: error });
    process.exit(1);
  });
}
