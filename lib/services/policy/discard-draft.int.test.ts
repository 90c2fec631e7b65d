import { Redis } from "ioredis";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { freshStoresPerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { policyChecksum } from "@/lib/policy/compile";
import { parseCompiledPolicy } from "@/lib/policy/compiled-schema";
import { withoutStamps } from "@/lib/policy/publish-stamps";
import { applyPolicyFile } from "./apply-policy-file";
import { createApiKey } from "../access/create-api-key";
import { discardDraft } from "./discard-draft";
import { ServiceError } from "../errors";
import { compileDraft, publishPolicy } from "./publish-policy";
import { rollbackPolicy } from "./rollback-policy";
import { saveTier } from "./save-tier";
import { setTenantTier } from "./set-tenant-tier";
import { upsertTenantOverride } from "./upsert-tenant-override";
import { DEMO, draftDemo } from "./testing/policy-rows";

const actor = "test:discard";
const product = { actor: "user:pm@example.com", role: "product" } as const;

const stores = freshStoresPerFile("discard");
let db: PrismaClient;
let redis: Redis;
beforeAll(() => ({ db, redis } = stores));
beforeEach(() => draftDemo(db, actor));

const draftChecksum = async () => policyChecksum(await compileDraft(db));

/** Draft changes a product manager makes: a new tier, a tenant moved onto it, an override. */
async function pendingChanges() {
  await saveTier(
    db,
    { originalName: null, tier: { name: "startup", weight: 2, limits: [{ operation: "*", scope: "api_key", algorithm: "fixed_window", limit: 50, window: "1m" }], quotas: [] } },
    product,
  );
  await setTenantTier(db, { tenant: "wonka", tier: "startup" }, product);
  await upsertTenantOverride(db, { tenant: "stark", override: { operation: "*", scope: "api_key", limit: 5000 } }, product);
}

describe("discardDraft", () => {
  it("resets the draft to the live version, audited, and keeps keys created meanwhile", async () => {
    const v1 = await publishPolicy({ db, redis }, { actor });
    await pendingChanges();
    await createApiKey({ db, redis }, { tenant: "acme", name: "fresh" }, product);
    expect(await draftChecksum()).not.toBe(v1.checksum);

    const result = await discardDraft(db, product);
    expect(result.version).toBe(1);
    expect(result.changes).toBeGreaterThanOrEqual(4); // tier, its limit, wonka's tier, stark's override
    expect(await draftChecksum()).toBe(v1.checksum);
    expect(await db.tier.findUnique({ where: { name: "startup" } })).toBeNull();
    expect((await db.apiKey.findFirstOrThrow({ where: { name: "fresh", tenant: { slug: "acme" } } })).revokedAt).toBeNull();
    const entry = await db.auditEntry.findFirstOrThrow({ where: { action: "policy.discard_draft" } });
    expect(entry).toMatchObject({ actor: product.actor, entityId: "1", after: { resetTo: 1, changes: result.changes } });
    expect(await db.auditEntry.count({ where: { action: "tier.delete", actor: product.actor } })).toBe(1);
    // The next publish has nothing to ship.
    expect((await publishPolicy({ db, redis }, { actor })).status).toBe("unchanged");

    // A draft equal to live: nothing written, no audit entry.
    expect((await discardDraft(db, product)).changes).toBe(0);
    expect(await db.auditEntry.count({ where: { action: "policy.discard_draft" } })).toBe(1);
  });

  it("is refused for roles that may not edit the draft, and when nothing is published", async () => {
    const none = await discardDraft(db, product).catch((e: unknown) => e);
    expect(none).toBeInstanceOf(ServiceError);
    expect((none as ServiceError).code).toBe("conflict");

    await publishPolicy({ db, redis }, { actor });
    await pendingChanges();
    for (const role of ["sre", "billing"] as const) {
      const refused = await discardDraft(db, { actor: `user:${role}@example.com`, role }).catch((e: unknown) => e);
      expect((refused as ServiceError).code).toBe("forbidden");
    }
    expect(await db.tier.findUnique({ where: { name: "startup" } })).not.toBeNull();
  });
});

describe("rollback resets the draft", () => {
  it("ends with the rolled-back version both live and in the draft, so the next publish ships nothing", async () => {
    const v1 = await publishPolicy({ db, redis }, { actor });
    await pendingChanges();
    const v2 = await publishPolicy({ db, redis }, { actor });
    expect(v2.version).toBe(2);
    // More pending work on top of v2, then the rollback.
    await setTenantTier(db, { tenant: "acme", tier: "pro" }, product);

    const back = await rollbackPolicy({ db, redis }, { actor: product.actor, toVersion: 1 });
    expect(back).toMatchObject({ version: 3 });
    // v1's document, plus the one change the rollback itself makes: wonka leaves tier startup at
    // the rollback, a plan change mid-period stamped on it (issue #26); nothing else differs.
    const v3 = parseCompiledPolicy((await db.policyVersion.findUniqueOrThrow({ where: { version: 3 } })).document);
    if (!v3.ok) throw new Error("v3 does not validate");
    expect(v3.value.tenants.wonka?.planChange).toMatchObject({ fromTier: "startup", rule: "full" });
    expect(policyChecksum(withoutStamps(v3.value))).toBe(v1.checksum);
    expect(back.draftReset).toBeGreaterThanOrEqual(5);
    // The confirmation counts what was pending (acme's tier), not the rows the reset to v1 rewrote.
    expect(back.pendingDiscarded).toBe(1);
    expect(await draftChecksum()).toBe(v1.checksum);
    expect((await db.tenant.findUniqueOrThrow({ where: { slug: "acme" }, include: { tier: true } })).tier.name).toBe("free");
    expect((await publishPolicy({ db, redis }, { actor })).status).toBe("unchanged");
    // Each reset row is audited under the one who rolled back.
    expect(await db.auditEntry.count({ where: { action: "tier.delete", actor: product.actor } })).toBe(1);
  });
});

describe("the tiers' order after a rollback or a discard (#29, defect 7)", () => {
  const BASIC = `  - name: basic\n    weight: 2\n    limits:\n      - { operation: "*", scope: api_key, algorithm: fixed_window, limit: 50, window: 1m }\n`;
  const withBasic = DEMO.replace("  - name: pro\n", `${BASIC}  - name: pro\n`);
  const tierNames = async () => (await db.tier.findMany({ orderBy: [{ position: "asc" }, { name: "asc" }], select: { name: true } })).map((t) => t.name);

  it("a rollback puts the tiers back in the order that version was published in, also a tier the draft had dropped", async () => {
    expect(withBasic).not.toBe(DEMO);
    await applyPolicyFile(db, withBasic, { actor });
    const v1 = await publishPolicy({ db, redis }, { actor });
    expect(await tierNames()).toEqual(["free", "basic", "pro", "enterprise"]);
    expect((await db.policyVersion.findUniqueOrThrow({ where: { version: v1.version } })).tierOrder).toEqual(["free", "basic", "pro", "enterprise"]);
    // v2 drops basic.
    await applyPolicyFile(db, DEMO, { actor });
    await publishPolicy({ db, redis }, { actor });
    expect(await tierNames()).toEqual(["free", "pro", "enterprise"]);
    const back = await rollbackPolicy({ db, redis }, { actor: product.actor, toVersion: v1.version });
    expect(await tierNames()).toEqual(["free", "basic", "pro", "enterprise"]);
    expect((await db.policyVersion.findUniqueOrThrow({ where: { version: back.version } })).tierOrder).toEqual(["free", "basic", "pro", "enterprise"]);
  });

  it("discarding the draft undoes a reordering of the tiers, and counts it", async () => {
    await publishPolicy({ db, redis }, { actor });
    const reordered = DEMO.replace(/( {2}- name: pro\n[\s\S]*?)( {2}- name: enterprise\n[\s\S]*?)(\nglobalCaps:)/, "$2$1$3");
    await applyPolicyFile(db, reordered, { actor });
    expect(await tierNames()).toEqual(["free", "enterprise", "pro"]);
    const discarded = await discardDraft(db, product);
    expect(discarded.changes).toBeGreaterThan(0);
    expect(await tierNames()).toEqual(["free", "pro", "enterprise"]);
  });
});
