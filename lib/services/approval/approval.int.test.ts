import type { Redis } from "ioredis";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { freshStoresPerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { guardRollout } from "@/lib/jobs/rollout-guard";
import { keys } from "@/lib/redis/keys";
import { readCurrentVersion } from "@/lib/redis/policy";
import { applyPolicyFile } from "../policy/apply-policy-file";
import { serviceError } from "../testing/service-error";
import { publishPolicy } from "../policy/publish-policy";
import { changeRollout, rolloutStatus } from "../rollout/control-rollout";
import { startRollout } from "../rollout/start-rollout";
import { approveRequest, listApprovals, rejectRequest } from "./decide-approval";
import { cutFreeKeyLimit, DEMO } from "../policy/testing/policy-rows";

/** The demo under a rule: a change reaching more than 20% of tenants needs a second person. */
const RULED = `${DEMO}\napproval:\n  beyondPercent: 20\n`;
const CUT = cutFreeKeyLimit(RULED);
const PM = "user:pm@example.com";
const SRE_LEAD = "user:lead@example.com";
const MIN = 60_000;
const T0 = Date.UTC(2026, 11, 8, 10, 0, 10);

let db: PrismaClient;
let redis: Redis;

const stores = freshStoresPerFile("apr");
beforeAll(() => ({ db, redis } = stores));
beforeEach(async () => {
  await db.approvalRequest.deleteMany();
  await db.rollout.deleteMany();
  await db.policyVersion.deleteMany();
  await db.auditEntry.deleteMany();
  await redis.del(keys.policyRollout(), keys.policyCurrent(), keys.policyVersion(1), keys.policyVersion(2));
  await applyPolicyFile(db, RULED, { actor: PM });
  // The first publish makes the rule live; it judges every publish after it.
  expect(await publishPolicy({ db, redis }, { actor: PM, role: "product", nowMs: T0 - 10 * MIN })).toMatchObject({ status: "published", version: 1 });
  await applyPolicyFile(db, CUT, { actor: PM });
});

describe("a publish beyond the approval rule's blast radius", () => {
  it("is requested, refused to its author, and published once another user approves, both audited with the diff", async () => {
    const asked = await publishPolicy({ db, redis }, { actor: PM, role: "product", note: "cut free", nowMs: T0 });
    expect(asked.status).toBe("approval_pending");
    expect(asked.approval).toMatchObject({ kind: "publish", state: "pending", requestedBy: PM, action: "publish the draft to everyone as v2" });
    expect(asked.approval!.reasons).toEqual(["it reaches 5 of 12 tenants (41.7%), more than the 20% blast radius"]);
    expect(asked.approval!.diff.map((l) => l.text)).toContain("free: * per api_key — sliding_window_counter 100 per 1m → sliding_window_counter 50 per 1m");
    // Nothing is published while it waits.
    expect(await db.policyVersion.count()).toBe(1);
    expect(await readCurrentVersion(redis)).toBe(1);
    // Asking again does not queue a second request.
    expect((await publishPolicy({ db, redis }, { actor: PM, role: "product", nowMs: T0 + 1 })).approval!.id).toBe(asked.approval!.id);

    const own = await serviceError(approveRequest({ db, redis }, asked.approval!.id, { actor: PM, nowMs: T0 + MIN }));
    expect(own.code).toBe("forbidden");
    expect(own.message).toBe(`${PM} requested ${asked.approval!.id} and cannot approve it: another user with publish rights must (the author of a change never approves it)`);
    expect(await db.policyVersion.count()).toBe(1);

    const done = await approveRequest({ db, redis }, asked.approval!.id, { actor: SRE_LEAD, reason: "looks right", nowMs: T0 + 2 * MIN });
    expect(done).toMatchObject({ version: 2, rollout: null, approval: { state: "approved", decidedBy: SRE_LEAD, decisionReason: "looks right" } });
    expect(await readCurrentVersion(redis)).toBe(2);
    const v2 = await db.policyVersion.findUniqueOrThrow({ where: { version: 2 } });
    expect(v2.author).toBe(PM);
    expect(v2.note).toBe(`cut free; approved by ${SRE_LEAD} (${asked.approval!.id})`);
    const request = await db.auditEntry.findFirstOrThrow({ where: { action: "approval.request" } });
    expect(request.actor).toBe(PM);
    expect(JSON.stringify(request.after)).toContain("sliding_window_counter 100 per 1m → sliding_window_counter 50 per 1m");
    const approval = await db.auditEntry.findFirstOrThrow({ where: { action: "approval.approve" } });
    expect(approval.actor).toBe(SRE_LEAD);
    expect(JSON.stringify(approval.before)).toContain("sliding_window_counter 100 per 1m → sliding_window_counter 50 per 1m");
    expect((await serviceError(approveRequest({ db, redis }, asked.approval!.id, { actor: SRE_LEAD }))).message).toMatch(/is already approved \(by user:lead@example.com\)/);
  });

  it("publishes nothing when rejected, and the rejection is audited with the reason", async () => {
    const asked = await publishPolicy({ db, redis }, { actor: PM, role: "product", nowMs: T0 });
    expect((await serviceError(rejectRequest({ db }, asked.approval!.id, { actor: SRE_LEAD, reason: "  " }))).field).toBe("reason");
    const rejected = await rejectRequest({ db }, asked.approval!.id, { actor: SRE_LEAD, reason: "free users would churn", nowMs: T0 + MIN });
    expect(rejected.approval).toMatchObject({ state: "rejected", decidedBy: SRE_LEAD, decisionReason: "free users would churn" });
    expect((await serviceError(approveRequest({ db, redis }, asked.approval!.id, { actor: SRE_LEAD }))).code).toBe("conflict");
    expect(await db.policyVersion.count()).toBe(1);
    expect(await readCurrentVersion(redis)).toBe(1);
    expect(await db.auditEntry.count({ where: { action: "approval.reject", actor: SRE_LEAD } })).toBe(1);
    expect(await listApprovals({ db }, { state: "pending" })).toEqual([]);
  });

  it("refuses to approve a request whose draft changed since, publishing nothing", async () => {
    const asked = await publishPolicy({ db, redis }, { actor: PM, role: "product", nowMs: T0 });
    await applyPolicyFile(db, CUT.replace("limit: 50, window: 1m", "limit: 10, window: 1m"), { actor: PM });
    const stale = await serviceError(approveRequest({ db, redis }, asked.approval!.id, { actor: SRE_LEAD, nowMs: T0 + MIN }));
    expect(stale).toMatchObject({ code: "conflict", field: "approval" });
    expect(stale.message).toContain("approved a different draft");
    expect(await db.policyVersion.count()).toBe(1);
    // A new request supersedes the stale one.
    const again = await publishPolicy({ db, redis }, { actor: PM, role: "product", nowMs: T0 + 2 * MIN });
    expect(again.approval!.id).not.toBe(asked.approval!.id);
    expect((await db.approvalRequest.findUniqueOrThrow({ where: { id: asked.approval!.id } })).state).toBe("superseded");
  });

  it("holds for an admin unless the rule says adminBypass, and never for a change within the radius", async () => {
    expect((await publishPolicy({ db, redis }, { actor: "token:sl_adm_x", role: "admin", nowMs: T0 })).status).toBe("approval_pending");
    await applyPolicyFile(db, RULED.replace("beyondPercent: 20", "beyondPercent: 20\n  adminBypass: true"), { actor: PM });
    // Turning adminBypass on is itself a change of the rule: the live rule wants a second person.
    const loosen = await publishPolicy({ db, redis }, { actor: "token:sl_adm_x", role: "admin", nowMs: T0 + 1 });
    expect(loosen.approval!.reasons).toEqual(["it changes the approval rule itself"]);
    expect(await approveRequest({ db, redis }, loosen.approval!.id, { actor: SRE_LEAD, nowMs: T0 + 2 })).toMatchObject({ version: 2 });
    const bypass = CUT.replace("beyondPercent: 20", "beyondPercent: 20\n  adminBypass: true");
    await applyPolicyFile(db, bypass, { actor: PM });
    // Under the live rule with adminBypass, a product user still asks; an admin passes.
    expect((await publishPolicy({ db, redis }, { actor: PM, role: "product", nowMs: T0 + 3 })).status).toBe("approval_pending");
    expect(await publishPolicy({ db, redis }, { actor: "token:sl_adm_x", role: "admin", nowMs: T0 + 4 })).toMatchObject({ status: "published", version: 3 });
    // Moving one tenant (acme) to pro reaches 1 of 12 (8%): within the radius, no second person.
    await applyPolicyFile(db, bypass.replace("tier: free\n", "tier: pro\n"), { actor: PM });
    expect(await publishPolicy({ db, redis }, { actor: PM, role: "product", nowMs: T0 + 5 })).toMatchObject({ status: "published", version: 4 });
  });
});

describe("a guarded rollout under the approval rule", () => {
  it("runs its canary and 10% steps freely, and waits at 100% for a second person who is not its author", async () => {
    const started = await startRollout({ db, redis }, { canaries: ["acme"], steps: ["10%:1h", "100%"] }, { actor: PM, role: "product", nowMs: T0 });
    expect(started.status).toBe("started");
    const id = started.status === "started" ? started.rollout.id : "";
    expect((await changeRollout({ db, redis }, "promote", { actor: PM, role: "product", nowMs: T0 + MIN })).step).toBe(1);
    // The bake time passes: the guard asks for the last step on the author's behalf, and moves nothing.
    expect(await guardRollout({ db, redis }, { nowMs: T0 + 2 * MIN + 60 * MIN })).toMatchObject({ rollout: id, action: "awaiting-approval" });
    // Asked once: the next passes wait quietly.
    expect(await guardRollout({ db, redis }, { nowMs: T0 + 2 * MIN + 60 * MIN + 5_000 })).toMatchObject({ rollout: id, action: "none" });
    const status = (await rolloutStatus({ db }))!;
    expect(status).toMatchObject({ state: "running", step: 1, approval: { kind: "rollout-step", rollout: id, step: 2, requestedBy: PM, state: "pending" } });
    const requestId = status.approval!.id;
    // A promote by someone else is the same request, not a second one.
    expect((await changeRollout({ db, redis }, "promote", { actor: SRE_LEAD, role: "product", nowMs: T0 + 63 * MIN })).approval!.id).toBe(requestId);
    expect((await serviceError(approveRequest({ db, redis }, requestId, { actor: PM, nowMs: T0 + 64 * MIN }))).code).toBe("forbidden");
    expect(await db.policyVersion.count()).toBe(1);
    const done = await approveRequest({ db, redis }, requestId, { actor: SRE_LEAD, nowMs: T0 + 65 * MIN });
    expect(done).toMatchObject({ version: 2, rollout: id, approval: { state: "approved" } });
    expect((await rolloutStatus({ db }))!.state).toBe("completed");
    expect(await readCurrentVersion(redis)).toBe(2);
  });

  it("drops the request a step waited for when the rollout is aborted", async () => {
    await startRollout({ db, redis }, { canaries: ["acme"], steps: ["10%:1h", "100%"] }, { actor: PM, role: "product", nowMs: T0 });
    await changeRollout({ db, redis }, "promote", { actor: PM, role: "product", nowMs: T0 + MIN });
    const waiting = (await changeRollout({ db, redis }, "promote", { actor: PM, role: "product", nowMs: T0 + 2 * MIN })).approval!;
    expect(waiting).toMatchObject({ kind: "rollout-step", state: "pending" });
    await changeRollout({ db, redis }, "abort", { actor: PM, nowMs: T0 + 3 * MIN });
    expect(await db.approvalRequest.findUniqueOrThrow({ where: { id: waiting.id } })).toMatchObject({ state: "superseded" });
    expect((await serviceError(approveRequest({ db, redis }, waiting.id, { actor: SRE_LEAD }))).message).toContain("is already superseded");
  });

  it("asks before its start when the first step is already beyond the radius, and approving starts it", async () => {
    const asked = await startRollout({ db, redis }, { steps: ["100%"] }, { actor: PM, role: "product", nowMs: T0 });
    expect(asked.status).toBe("approval_pending");
    if (asked.status !== "approval_pending") return;
    expect(asked.approval).toMatchObject({ kind: "rollout", rollout: expect.stringMatching(/^ro_/) });
    expect(await db.rollout.count()).toBe(0);
    const done = await approveRequest({ db, redis }, asked.approval.id, { actor: SRE_LEAD, nowMs: T0 + MIN });
    expect(done.rollout).toBe(asked.approval.rollout);
    expect(await rolloutStatus({ db })).toMatchObject({ id: asked.approval.rollout, state: "running", author: PM, step: 0 });
  });
});
