import type { Redis } from "ioredis";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { freshStoresPerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { guardRollout, newestDrainedMinute } from "@/lib/jobs/rollout-guard";
import { keys } from "@/lib/redis/keys";
import { readCurrentVersion } from "@/lib/redis/policy";
import { readRolloutRouting } from "@/lib/redis/rollout";
import { applyPolicyFile } from "../policy/apply-policy-file";
import { discardDraft } from "../policy/discard-draft";
import { serviceError } from "../testing/service-error";
import { publishPolicy } from "../policy/publish-policy";
import { rollbackPolicy } from "../policy/rollback-policy";
import { changeRollout, rolloutStatus } from "./control-rollout";
import { formatRolloutStatus } from "./rollout-view";
import { writeRecordedMinute, type MinuteDecisions } from "@/lib/jobs/testing/recorded-minute";
import { loadDashboard } from "../observe/usage-dashboard";
import { latestRolloutCharts } from "./rollout-charts";
import { startRollout as startOrRequest } from "./start-rollout";
import { cutFreeKeyLimit, DEMO } from "../policy/testing/policy-rows";

/** The draft change rolled out: the free tier's per-key limit cut from 100 to 50 a minute. */
const CUT = cutFreeKeyLimit(DEMO);
const actor = "test:rollout";
const MIN = 60_000;
const T0 = Date.UTC(2026, 11, 7, 10, 0, 10);

let db: PrismaClient;
let redis: Redis;

/** Starts a rollout (these policies have no approval rule, so it always starts): its view. */
async function startRollout(...args: Parameters<typeof startOrRequest>) {
  const started = await startOrRequest(...args);
  if (started.status !== "started") throw new Error(`expected a started rollout, got ${started.status}`);
  return started.rollout;
}

/** A minute of decisions as the decision servers record them and the rollup writes them; `denied` are 429s (rate limited). */
async function usage(minuteMs: number, rows: { tenant: string; operation?: string; allowed: number; denied: number; other?: MinuteDecisions["denied"] }[]): Promise<void> {
  await writeRecordedMinute(
    db,
    minuteMs,
    rows.map((r) => ({ tenant: r.tenant, operation: r.operation, allowed: r.allowed, denied: { rate_limited: r.denied, ...r.other } })),
  );
}

const stores = freshStoresPerFile("ro");
beforeAll(() => ({ db, redis } = stores));
beforeEach(async () => {
  await db.rollout.deleteMany();
  await db.alertEvent.deleteMany();
  await db.usageRollup.deleteMany();
  await db.policyVersion.deleteMany();
  await redis.del(keys.policyRollout(), keys.policyCurrent(), keys.policyVersion(1), keys.policyVersion(2));
  await applyPolicyFile(db, DEMO, { actor });
  await publishPolicy({ db, redis }, { actor, nowMs: T0 - 10 * MIN });
  await applyPolicyFile(db, CUT, { actor });
});

describe("starting a rollout", () => {
  it("writes v2 next to the live v1 with the canaries' routing, audited, and status names step, cohort and guardrails", async () => {
    const view = await startRollout({ db, redis }, { canaries: ["acme", "globex"], steps: ["10%:1h", "100%"] }, { actor, nowMs: T0 });
    expect(view).toMatchObject({ state: "running", liveVersion: 1, candidateVersion: 2, step: 0, cohort: { canaries: ["acme", "globex"], percent: 0, tenants: 2, members: ["acme", "globex"] } });
    expect(view.steps.map((s) => s.label)).toEqual(["2 canaries for 15m", "10% + 2 canaries for 1h", "100% + 2 canaries"]);
    expect(await readCurrentVersion(redis)).toBe(1);
    const routing = await readRolloutRouting(redis);
    expect(routing).toMatchObject({ status: "ok", routing: { id: view.id, liveVersion: 1, candidateVersion: 2, canaries: ["acme", "globex"], percent: 0, step: 0 } });
    expect(JSON.parse((await redis.get(keys.policyVersion(2)))!)).toMatchObject({ version: 2 });
    expect(await db.auditEntry.count({ where: { action: "rollout.start", entityId: view.id } })).toBe(1);
    const text = formatRolloutStatus((await rolloutStatus({ db }))!);
    expect(text).toContain("step 1 of 3: 2 canaries for 15m");
    expect(text).toContain("cohort: 2 of ");
    expect(text).toContain("canaries acme, globex");
    expect(text).toContain("guardrails: cohort 429 share at most 5 points above the control's");
  });

  it("refuses bad input naming the part, and publishes nothing", async () => {
    expect((await serviceError(startRollout({ db, redis }, { canaries: ["acme", "nobody"], steps: ["100%"] }, { actor, nowMs: T0 }))).message).toBe('canaries[1]: no tenant "nobody" in the draft');
    expect((await serviceError(startRollout({ db, redis }, { steps: ["10%:1h", "50%:2h"] }, { actor, nowMs: T0 }))).message).toBe("steps[1]: the last step must be 100%, got 50%");
    expect((await serviceError(startRollout({ db, redis }, { steps: ["10%:1h", "5%:1h", "100%"] }, { actor, nowMs: T0 }))).field).toBe("steps[1]");
    expect((await serviceError(startRollout({ db, redis }, { steps: ["10%:a while", "100%"] }, { actor, nowMs: T0 }))).message).toContain("steps[0]: bake time");
    expect(await db.rollout.count()).toBe(0);
    expect((await readRolloutRouting(redis)).status).toBe("none");
    expect(await redis.exists(keys.policyVersion(2))).toBe(0);
  });

  it("refuses a second rollout, and a publish, rollback or discard while one runs", async () => {
    const first = await startRollout({ db, redis }, { steps: ["10%:1h", "100%"] }, { actor, nowMs: T0 });
    expect((await serviceError(startRollout({ db, redis }, { steps: ["100%"] }, { actor, nowMs: T0 }))).message).toContain(`rollout ${first.id} is running (step 1 of 2: 10% for 1h)`);
    expect((await serviceError(publishPolicy({ db, redis }, { actor }))).message).toContain(`no publish to everyone while rollout ${first.id} is running`);
    expect((await serviceError(rollbackPolicy({ db, redis }, { actor, toVersion: 1 }))).code).toBe("conflict");
    expect((await serviceError(discardDraft(db, { actor, role: "admin" }))).message).toContain("no discard of the draft while rollout");
    expect(await db.policyVersion.count()).toBe(1);
  });
});

describe("moving a rollout by hand", () => {
  it("promote moves step by step, and the last step publishes v2 to everyone", async () => {
    await startRollout({ db, redis }, { canaries: ["acme"], steps: ["10%:1h", "100%"] }, { actor, nowMs: T0 });
    const second = await changeRollout({ db, redis }, "promote", { actor, nowMs: T0 + MIN });
    expect(second).toMatchObject({ state: "running", step: 1, cohort: { percent: 10 } });
    // 10% of the demo's 12 tenants is 1, chosen by the hash, plus the canary (maybe the same one).
    expect(second.cohort.members).toContain("acme");
    expect(second.cohort.tenants).toBeLessThanOrEqual(2);
    expect((await readRolloutRouting(redis)).status === "ok" && (await readRolloutRouting(redis))).toMatchObject({ routing: { percent: 10, step: 1 } });
    const done = await changeRollout({ db, redis }, "promote", { actor, nowMs: T0 + 2 * MIN });
    expect(done).toMatchObject({ state: "completed", cohort: { tenants: 0 } });
    expect(await readCurrentVersion(redis)).toBe(2);
    expect((await readRolloutRouting(redis)).status).toBe("none");
    const v2 = await db.policyVersion.findUniqueOrThrow({ where: { version: 2 } });
    expect(JSON.stringify(v2.document)).toContain('"limit":50');
    expect(await db.auditEntry.count({ where: { action: "policy.publish", entityId: "2" } })).toBe(1);
    expect((await serviceError(changeRollout({ db, redis }, "promote", { actor }))).message).toMatch(/no rollout is running to promote \(the last one, ro_\w+, is completed\)/);
  });

  it("pause keeps the cohort on v2; abort sends everyone back to v1 and leaves the draft", async () => {
    await startRollout({ db, redis }, { steps: ["10%:1h", "100%"] }, { actor, nowMs: T0 });
    expect(await changeRollout({ db, redis }, "pause", { actor, nowMs: T0 + MIN })).toMatchObject({ state: "paused", reason: `paused by ${actor}` });
    expect((await readRolloutRouting(redis)).status).toBe("ok");
    expect((await serviceError(changeRollout({ db, redis }, "pause", { actor }))).message).toContain("already paused");
    const aborted = await changeRollout({ db, redis }, "abort", { actor, reason: "wrong tier", nowMs: T0 + 2 * MIN });
    expect(aborted).toMatchObject({ state: "aborted", reason: "wrong tier" });
    expect((await readRolloutRouting(redis)).status).toBe("none");
    expect(await readCurrentVersion(redis)).toBe(1);
    // The draft still holds the change: publishing it now is a normal publish of v2.
    expect(await publishPolicy({ db, redis }, { actor })).toMatchObject({ status: "published", version: 2 });
  });
});

describe("the guard (worker job, test clock)", () => {
  it("rolls the cohort back within the minute the canaries' 429 share jumps, with an alert naming the rollout, step and tenants", async () => {
    const view = await startRollout({ db, redis }, { canaries: ["acme", "globex"], steps: ["10%:1h", "100%"] }, { actor, nowMs: T0 });
    const minute = Math.floor(T0 / MIN) * MIN;
    // The minute closes at minute + 60 s; the rollup drains it 5 s later.
    const now = minute + MIN + 6_000;
    expect(newestDrainedMinute(now)).toBe(minute);
    await usage(minute, [
      { tenant: "acme", allowed: 30, denied: 20 },
      { tenant: "globex", allowed: 48, denied: 2 },
      { tenant: "initech", allowed: 98, denied: 2 },
      { tenant: "hooli", allowed: 99, denied: 1 },
      // An operation the cohort did not use does not count for the control.
      { tenant: "hooli", operation: "export", allowed: 0, denied: 100 },
    ]);
    const result = await guardRollout({ db, redis }, { nowMs: now });
    expect(result).toMatchObject({ rollout: view.id, action: "rolled-back", check: { verdict: "breached", cohort: { decisions: 100, denied: 22 }, control: { decisions: 200, denied: 3 } } });
    expect((await readRolloutRouting(redis)).status).toBe("none");
    const status = (await rolloutStatus({ db }))!;
    expect(status.state).toBe("rolled-back");
    expect(status.reason).toContain("step 1 of 3: 2 canaries for 15m");
    expect(status.reason).toContain("tenants over it: acme");
    expect(status.reason).not.toContain("globex");
    expect(formatRolloutStatus(status)).toContain("why: guardrail");
    const alert = await db.alertEvent.findFirstOrThrow({ where: { kind: "rollout_guardrail" } });
    expect(alert.subject).toBe(`rollout:${view.id}`);
    expect(alert.message).toContain(`Rollout ${view.id}`);
    expect(alert.resolvedAt).toBeNull();
    expect(await db.auditEntry.count({ where: { action: "rollout.rollback", entityId: view.id } })).toBe(1);
    // The draft is as it was: a new rollout of it can start at once.
    expect((await startRollout({ db, redis }, { steps: ["10%:1h", "100%"] }, { actor, nowMs: now })).state).toBe("running");
  });

  it("counts 429s only, as the dashboards do: a canary whose denials are 403s and 503s holds, and quota exhaustion counts", async () => {
    const view = await startRollout({ db, redis }, { canaries: ["acme", "globex"], steps: ["10%:1h", "100%"] }, { actor, nowMs: T0 });
    const minute = Math.floor(T0 / MIN) * MIN;
    await usage(minute, [
      // acme: 40 denials, none a 429 (suspended, then the store closed); globex: 3 quota-exhausted 429s.
      { tenant: "acme", allowed: 60, denied: 0, other: { tenant_suspended: 30, store_unavailable: 10 } },
      { tenant: "globex", allowed: 97, denied: 0, other: { quota_exhausted: 3 } },
      { tenant: "initech", allowed: 196, denied: 4 },
    ]);
    const result = await guardRollout({ db, redis }, { nowMs: minute + MIN + 6_000 });
    expect(result).toMatchObject({ rollout: view.id, action: "none", check: { verdict: "holds", cohort: { decisions: 200, denied: 43, denied429: 3, share: 0.015 }, control: { decisions: 200, denied429: 4 } } });
    // The same figures as the dashboards' 429s for that minute.
    const dash = (tenant: string) => loadDashboard(db, { range: "1h", tenant, nowMs: minute + 2 * MIN, custom: { fromMs: minute, toMs: minute + MIN } });
    expect((await dash("acme")).totals).toMatchObject({ decisions: 100, denied: 40, share429Pct: 0 });
    expect((await dash("globex")).decisions[0]).toMatchObject({ denied429: 3 });
    expect((await rolloutStatus({ db }))!.state).toBe("running");
  });

  it("holds when the cohort is within 5 points, advances when the bake time is over, and completes at 100%", async () => {
    await startRollout({ db, redis }, { canaries: ["acme"], canaryBake: "5m", steps: ["10%:1h", "100%"] }, { actor, nowMs: T0 });
    const minute = Math.floor(T0 / MIN) * MIN;
    await usage(minute, [
      { tenant: "acme", allowed: 46, denied: 4 },
      { tenant: "initech", allowed: 97, denied: 3 },
    ]);
    expect(await guardRollout({ db, redis }, { nowMs: minute + MIN + 6_000 })).toMatchObject({ action: "none", check: { verdict: "holds" } });
    // The same minute is judged once.
    expect((await guardRollout({ db, redis }, { nowMs: minute + MIN + 30_000 }))!.check).toBeNull();
    expect(await guardRollout({ db, redis }, { nowMs: T0 + 5 * MIN })).toMatchObject({ action: "advanced" });
    expect((await rolloutStatus({ db }))!.cohort.percent).toBe(10);
    expect(await guardRollout({ db, redis }, { nowMs: T0 + 5 * MIN + 59 * MIN })).toMatchObject({ action: "none" });
    expect(await guardRollout({ db, redis }, { nowMs: T0 + 5 * MIN + 60 * MIN })).toMatchObject({ action: "completed" });
    expect(await readCurrentVersion(redis)).toBe(2);
    expect(await guardRollout({ db, redis }, { nowMs: T0 + 70 * MIN })).toBeNull();
  });

  it("rolls back when one canary's 429 share jumps against its own before the rollout, though the cohort as a whole holds", async () => {
    const view = await startRollout({ db, redis }, { canaries: ["acme", "globex"], steps: ["10%:1h", "100%"], guardrails: { maxTenantDenyShareIncrease: 20 } }, { actor, nowMs: T0 });
    const minute = Math.floor(T0 / MIN) * MIN;
    // Before the rollout: acme at 2%, globex at 0%.
    await usage(minute - 20 * MIN, [
      { tenant: "acme", allowed: 588, denied: 12 },
      { tenant: "globex", allowed: 1_000, denied: 0 },
    ]);
    await usage(minute, [
      { tenant: "acme", allowed: 70, denied: 30 },
      { tenant: "globex", allowed: 1_000, denied: 0 },
      { tenant: "initech", allowed: 198, denied: 2 },
    ]);
    const result = await guardRollout({ db, redis }, { nowMs: minute + MIN + 6_000 });
    // The cohort: 30 of 1,100 (2.7%) against the control's 1%: within 5 points.
    expect(result).toMatchObject({ rollout: view.id, action: "rolled-back", check: { verdict: "breached", cohort: { decisions: 1_100, denied: 30 } } });
    expect(result!.check!.marginPoints).toBeLessThan(5);
    expect(result!.check!.breaches).toEqual([{ guardrail: "tenant_429_share", tenants: ["acme"], message: expect.stringContaining("acme 30.0% (before 2.0%, +28.0 points)") }]);
    const alert = await db.alertEvent.findFirstOrThrow({ where: { kind: "rollout_guardrail" } });
    expect(alert.message).toContain(`Rollout ${view.id}`);
    expect(alert.message).toContain("step 1 of 3");
    expect(alert.message).toContain("a tenant's 429 share at most 20 points above its own before the rollout: acme");
    expect(alert.message).not.toContain("globex");
    expect((await readRolloutRouting(redis)).status).toBe("none");
  });

  it("pauses a pause-only rollout when the store errs as the redis_errors alert defines it", async () => {
    const view = await startRollout({ db, redis }, { canaries: ["acme"], steps: ["10%:1h", "100%"], guardrails: { pauseOnly: true } }, { actor, nowMs: T0 });
    const minute = Math.floor(T0 / MIN) * MIN;
    await usage(minute, [
      { tenant: "acme", allowed: 50, denied: 0 },
      { tenant: "initech", allowed: 100, denied: 0 },
    ]);
    await db.usageRollup.create({ data: { bucketStart: new Date(minute), granularity: "minute", tenant: "", tier: "", operation: "error", outcome: "breaker_open", count: 1n } });
    const result = await guardRollout({ db, redis }, { nowMs: minute + MIN + 6_000 });
    expect(result).toMatchObject({ rollout: view.id, action: "paused", check: { verdict: "breached", breaches: [{ guardrail: "store_errors", tenants: [] }] } });
    expect((await rolloutStatus({ db }))!.reason).toContain("1 breaker opening(s)");
    // Pause-only: the cohort keeps the new version.
    expect((await readRolloutRouting(redis)).status).toBe("ok");
  });

  it("writes the routing back when Redis lost it (a restart mid-rollout resumes where it was)", async () => {
    const view = await startRollout({ db, redis }, { steps: ["10%:1h", "100%"] }, { actor, nowMs: T0 });
    await redis.del(keys.policyRollout(), keys.policyVersion(2));
    expect(await guardRollout({ db, redis }, { nowMs: T0 + 1_000 })).toMatchObject({ rollout: view.id, action: "rerouted" });
    expect(await readRolloutRouting(redis)).toMatchObject({ status: "ok", routing: { id: view.id, percent: 10 } });
    expect(await redis.exists(keys.policyVersion(2))).toBe(1);
  });
});

describe("the Policy page's cohort-against-control charts", () => {
  it("draw each finished minute with the cohort of the step that ran then: 429 share, decisions, margin and all tenants' latency", async () => {
    // 20% of the demo's twelve tenants: two by the hash, so at least one besides the canary acme
    // (at 10% the one tenant taken was acme itself in one run of twelve, and no tenant joined).
    const view = await startRollout({ db, redis }, { canaries: ["acme"], steps: ["20%:1h", "100%"] }, { actor, nowMs: T0 });
    const m0 = Math.floor(T0 / MIN) * MIN;
    await usage(m0, [
      { tenant: "acme", allowed: 90, denied: 10 },
      // hooli: 20 denials, none a 429.
      { tenant: "hooli", allowed: 180, denied: 0, other: { tenant_suspended: 20 } },
    ]);
    const promoted = await changeRollout({ db, redis }, "promote", { actor, nowMs: m0 + 2 * MIN + 10_000 });
    // The rollout's id salts the hash: which tenants the 20% takes differs from run to run.
    const joined = promoted.cohort.members.find((t) => t !== "acme");
    const control = ["hooli", "stark", "globex"].find((t) => !promoted.cohort.members.includes(t))!;
    expect(joined).toBeDefined();
    expect((await db.rollout.findUniqueOrThrow({ where: { id: view.id } })).stepStarts.map((d) => d.getTime())).toEqual([T0, m0 + 2 * MIN + 10_000]);
    await usage(m0 + 2 * MIN, [
      { tenant: "acme", allowed: 50, denied: 0 },
      { tenant: joined!, allowed: 40, denied: 10 },
      { tenant: control, allowed: 195, denied: 5 },
    ]);
    const charts = (await latestRolloutCharts(db, { nowMs: m0 + 4 * MIN + 10_000 }))!;
    expect(charts).toMatchObject({ rollout: view.id, state: "running", fromMs: m0, toMs: m0 + 4 * MIN, truncated: false, steps: [{ step: 1, t: m0 }, { step: 2, t: m0 + 2 * MIN }] });
    expect(charts.points.map((p) => p.t)).toEqual([m0, m0 + MIN, m0 + 2 * MIN, m0 + 3 * MIN]);
    // Minute 1, the canary alone: 10% against the control's 0% (hooli's 403s are no 429s).
    expect(charts.points[0]).toMatchObject({ step: 1, cohortDecisions: 100, controlDecisions: 200, cohortSharePct: 10, controlSharePct: 0, marginPoints: 10, maxMarginPoints: 5, allowP95Ms: 1, rejectP95Ms: 1 });
    expect(charts.points[1]).toMatchObject({ step: 1, cohortDecisions: 0, cohortSharePct: null, marginPoints: null, allowP95Ms: null });
    // Minute 3, step 2: a tenant the 20% took joined the cohort (another it took, if any, sent nothing).
    expect(charts.points[2]).toMatchObject({ step: 2, cohortDecisions: 100, controlDecisions: 200, cohortSharePct: 10, controlSharePct: 2.5, marginPoints: 7.5 });
    // After it ends, the charts cover its duration (the minute it ended in included).
    await changeRollout({ db, redis }, "abort", { actor, nowMs: m0 + 4 * MIN + 20_000 });
    const ended = (await latestRolloutCharts(db, { nowMs: m0 + 30 * MIN }))!;
    expect(ended).toMatchObject({ state: "aborted", fromMs: m0, toMs: m0 + 5 * MIN });
    expect(await latestRolloutCharts(db, { nowMs: m0 + 26 * 60 * MIN })).toBeNull();
  });
});

