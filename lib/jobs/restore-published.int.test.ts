import { Redis } from "ioredis";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { freshStoresPerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { billingPeriod } from "@/lib/policy/billing-period";
import { quotaPeriod } from "@/lib/policy/quota-period";
import { keys, PUBLISHED_MARKER } from "@/lib/redis/keys";
import { applyPolicyFile } from "@/lib/services/policy/apply-policy-file";
import { createApiToken } from "@/lib/services/access/create-api-token";
import { publishPolicy } from "@/lib/services/policy/publish-policy";
import { clearPolicy, DEMO } from "@/lib/services/policy/testing/policy-rows";
import { restorePublishedState } from "./restore-published";

const actor = "test:restore";

const stores = freshStoresPerFile("restore");
let db: PrismaClient;
let redis: Redis;
beforeAll(() => ({ db, redis } = stores));

async function wipeRedis(pattern = "*"): Promise<void> {
  const found = await redis.keys(`${process.env.SLUICE_REDIS_PREFIX}${pattern}`);
  if (found.length) await redis.del(...found);
}

/** What publish left in Redis: the live version, its document, the key index and the token set. */
async function publishedSnapshot() {
  const version = await redis.get(keys.policyCurrent());
  return {
    version,
    // Parsed: Postgres's jsonb keeps the document's fields in its own order (the checksum does not depend on it).
    document: version === null ? null : (JSON.parse((await redis.get(keys.policyVersion(Number(version)))) ?? "null") as unknown),
    keyIndex: await redis.hgetall(keys.keyIndex()),
    tokens: (await redis.smembers(keys.serviceTokens())).sort(),
  };
}
beforeEach(async () => {
  await clearPolicy(db);
  await db.quotaUsage.deleteMany();
  await db.apiToken.deleteMany();
  await wipeRedis();
});

describe("restoring what Redis lost (issue #17, defect 1)", () => {
  it("writes the last published version, key index and service tokens back from Postgres, without a new version", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    await createApiToken({ db, redis }, { kind: "service", name: "gw" }, actor);
    await publishPolicy({ db, redis }, { actor });
    const before = await publishedSnapshot();
    expect(before.keyIndex[PUBLISHED_MARKER]).toBe("1");
    expect(before.tokens).toContain(PUBLISHED_MARKER);
    expect(Object.keys(before.keyIndex).length).toBeGreaterThan(5);
    const audits = await db.auditEntry.count();

    await wipeRedis(); // redis-server restarted without persistence
    const result = await restorePublishedState({ db, redis }, { nowMs: Date.now() });
    expect(result).toMatchObject({ missing: ["policy", "keyIndex", "serviceTokens"], restoredVersion: 1, serviceTokens: 1 });
    expect(result.keys).toBe(Object.keys(before.keyIndex).length - 1);
    expect(await publishedSnapshot()).toEqual(before);
    expect(await db.policyVersion.count()).toBe(1);
    expect(await db.auditEntry.count()).toBe(audits);

    // Nothing missing any more: the next probe writes nothing.
    expect(await restorePublishedState({ db, redis }, { nowMs: Date.now() })).toMatchObject({ missing: [], restoredVersion: null });
  });

  it("restores a lost key index or token set alone, and an empty published set stays empty but marked", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    await publishPolicy({ db, redis }, { actor });
    const before = await publishedSnapshot();
    expect(before.tokens).toEqual([PUBLISHED_MARKER]); // published with no service tokens: empty, marked
    await redis.del(keys.keyIndex());
    expect(await restorePublishedState({ db, redis }, { nowMs: Date.now() })).toMatchObject({ missing: ["keyIndex"], restoredVersion: 1 });
    await redis.del(keys.serviceTokens());
    expect(await restorePublishedState({ db, redis }, { nowMs: Date.now() })).toMatchObject({ missing: ["serviceTokens"], restoredVersion: 1 });
    expect(await publishedSnapshot()).toEqual(before);
  });

  it("does nothing before anything was published", async () => {
    expect(await restorePublishedState({ db, redis }, { nowMs: Date.now() })).toMatchObject({ missing: ["policy", "keyIndex", "serviceTokens"], restoredVersion: null });
    expect(await redis.get(keys.policyCurrent())).toBeNull();
  });

  it("raises this period's quota counters to what Postgres counted, never lowers one, never counts twice", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    await publishPolicy({ db, redis }, { actor });
    const nowMs = Date.now();
    const month = quotaPeriod(nowMs, "month");
    const day = quotaPeriod(nowMs, "day");
    const key = (tenant: string, quotaId: string, label: string) => `${keys.quota(tenant, quotaId)}:${label}`;
    await db.quotaUsage.createMany({
      data: [
        { tenant: "lost", quotaId: "q_month", period: month.label, used: 500n },
        { tenant: "lost", quotaId: "q_day", period: day.label, used: 7n },
        { tenant: "survived", quotaId: "q_month", period: month.label, used: 3n },
        { tenant: "recreated", quotaId: "q_month", period: month.label, used: 40n },
        { tenant: "old", quotaId: "q_month", period: "2000-01", used: 99n },
      ],
    });
    await wipeRedis();
    await redis.set(key("survived", "q_month", month.label), "10"); // a counter another node kept
    await redis.set(key("recreated", "q_month", month.label), "2"); // decisions since the restart

    const result = await restorePublishedState({ db, redis }, { nowMs });
    expect(result).toMatchObject({ restoredVersion: 1, quotaCounters: 3, quotaUnits: 500 + 7 + 38 });
    expect(await redis.get(key("lost", "q_month", month.label))).toBe("500");
    expect(await redis.get(key("lost", "q_day", day.label))).toBe("7");
    expect(await redis.get(key("survived", "q_month", month.label))).toBe("10");
    expect(await redis.get(key("recreated", "q_month", month.label))).toBe("40");
    expect(await redis.exists(key("old", "q_month", "2000-01"))).toBe(0);
    // Expires when its period ends, like the counter the decision script creates.
    const pttl = await redis.pttl(key("lost", "q_month", month.label));
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(month.endMs - nowMs + 1_000);

    // A second loss of the policy alone, or a probe repeated: nothing is added twice.
    await redis.del(keys.policyCurrent());
    expect(await restorePublishedState({ db, redis }, { nowMs })).toMatchObject({ restoredVersion: 1, quotaCounters: 0, quotaUnits: 0 });
    expect(await redis.get(key("lost", "q_month", month.label))).toBe("500");

    // Counters are only touched when the policy itself was lost (Redis lost its data).
    await redis.set(key("lost", "q_day", day.label), "1");
    await redis.del(keys.keyIndex());
    expect(await restorePublishedState({ db, redis }, { nowMs })).toMatchObject({ missing: ["keyIndex"], quotaCounters: 0 });
    expect(await redis.get(key("lost", "q_day", day.label))).toBe("1");
  });

  it("refills a tenant anchored elsewhere under its own period's label, which its counters carry", async () => {
    const anchored = DEMO.replace("  - slug: acme\n    name: Acme Corp\n", "  - slug: acme\n    name: Acme Corp\n    billing: { anchor: 2026-01-15, timeZone: America/Los_Angeles }\n");
    expect(anchored).not.toBe(DEMO);
    await applyPolicyFile(db, anchored, { actor });
    await publishPolicy({ db, redis }, { actor });
    const nowMs = Date.now();
    const own = billingPeriod(nowMs, "month", { anchor: "2026-01-15", timeZone: "America/Los_Angeles" });
    const label = own.label;
    expect(label).toMatch(/@America\/Los_Angeles$/);
    const key = `${keys.quota("acme", "q_month")}:${label}`;
    await db.quotaUsage.createMany({ data: [{ tenant: "acme", quotaId: "q_month", period: label, used: 321n }] });
    await wipeRedis();
    const result = await restorePublishedState({ db, redis }, { nowMs });
    expect(result).toMatchObject({ restoredVersion: 1, quotaCounters: 1, quotaUnits: 321 });
    expect(await redis.get(key)).toBe("321");
    const pttl = await redis.pttl(key);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(own.endMs - nowMs + 1_000);
  });
});
