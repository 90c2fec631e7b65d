import { writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runSluice } from "./testing/sluice-cli";
import { freshDatabasePerFile, testRedisPrefix, testRedisUrl } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { publishPolicy } from "@/lib/services/policy/publish-policy";
import { cutFreeKeyLimit, DEMO } from "@/lib/services/policy/testing/policy-rows";
import { Redis } from "ioredis";

const RULED = `${DEMO}\napproval:\n  beyondPercent: 20\n`;
const CUT = cutFreeKeyLimit(RULED);
const PREFIX = `${testRedisPrefix()}aprcli:`;

const fresh = freshDatabasePerFile();
let db: PrismaClient;

const sluice = (...args: string[]) => runSluice({ DATABASE_URL: fresh.url, REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: PREFIX }, args);

beforeAll(() => ({ db } = fresh));

describe("sluice publish and sluice approvals under the approval rule", () => {
  it("says the publish waits and how to approve it, refuses the same CLI user's approval, and approves another user's request", async () => {
    const ruled = path.join(tmpdir(), `sluice-approval-${process.pid}.yaml`);
    const cut = path.join(tmpdir(), `sluice-approval-cut-${process.pid}.yaml`);
    writeFileSync(ruled, RULED);
    writeFileSync(cut, CUT);
    expect((await sluice("apply", "-f", ruled)).code).toBe(0);
    expect((await sluice("publish")).stdout).toContain("Published v1");
    expect((await sluice("apply", "-f", cut)).code).toBe(0);

    const asked = await sluice("publish", "--note", "cut free");
    expect(asked.code).toBe(0);
    expect(asked.stdout).toMatch(/^Approval required: nothing was published\. Request (apr_\w+) \(publish the draft to everyone as v2\) waits for a second person, because it reaches 5 of 12 tenants/);
    const id = /Request (apr_\w+)/.exec(asked.stdout)![1]!;
    expect(asked.stdout).toContain(`sluice approvals approve ${id}`);
    expect(await db.policyVersion.count()).toBe(1);

    const listed = await sluice("approvals", "list");
    expect(listed.stdout).toContain(`${id}  pending  publish the draft to everyone as v2 — requested by cli:${userInfo().username}`);
    expect(listed.stdout).toContain("free: * per api_key — sliding_window_counter 100 per 1m → sliding_window_counter 50 per 1m");

    const own = await sluice("approvals", "approve", id);
    expect(own.code).toBe(1);
    expect(own.stderr).toContain(`error: cli:${userInfo().username} requested ${id} and cannot approve it`);
    expect(await db.policyVersion.count()).toBe(1);
    const noReason = await sluice("approvals", "reject", id);
    expect(noReason.code).toBe(1);
    expect(noReason.stderr).toContain("--reason");

    // A request made by someone else (here a UI user) the CLI user may approve.
    const redis = new Redis(testRedisUrl());
    process.env.SLUICE_REDIS_PREFIX = PREFIX;
    try {
      const theirs = await publishPolicy({ db, redis }, { actor: "user:pm@example.com", role: "product" });
      expect(theirs.status).toBe("approval_pending");
      const approved = await sluice("approvals", "approve", theirs.approval!.id, "--reason", "ok");
      expect(approved.code).toBe(0);
      expect(approved.stdout).toContain(`Approved ${theirs.approval!.id} (publish the draft to everyone as v2, requested by user:pm@example.com): v2 is live for everyone.`);
    } finally {
      redis.disconnect();
    }
    expect(await db.policyVersion.count()).toBe(2);
    expect((await sluice("approvals", "list", "--state", "superseded")).stdout).toContain(id);
  }, 300_000);
});
