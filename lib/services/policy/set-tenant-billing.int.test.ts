import { Redis } from "ioredis";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { freshStoresPerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { parseCompiledPolicy } from "@/lib/policy/compiled-schema";
import { planIsEmpty } from "@/lib/policy/plan";
import { applyPolicyFile } from "./apply-policy-file";
import { discardDraft } from "./discard-draft";
import { ServiceError } from "../errors";
import { exportPolicyFile } from "./export-policy-file";
import { publishPolicy } from "./publish-policy";
import { rollbackPolicy } from "./rollback-policy";
import { setTenantBilling, setTenantThresholds } from "./set-tenant-billing";
import { setTenantTier } from "./set-tenant-tier";
import { clearPolicy, DEMO, livePolicy } from "./testing/policy-rows";

const actor = "test:billing";
const editor = { actor, role: "admin" } as const;

const stores = freshStoresPerFile("bill");
let db: PrismaClient;
let redis: Redis;
beforeAll(() => ({ db, redis } = stores));

beforeEach(() => clearPolicy(db));

/** The demo policy with acme anchored on the 15th in Los Angeles (the anchor unquoted, as the issue writes it). */
const anchored = DEMO.replace("    tier: free\n", "    tier: free\n    billing: { anchor: 2026-03-15, timeZone: America/Los_Angeles }\n    thresholds: [50, 100]\n");

describe("a tenant's billing in the draft", () => {
  it("is stored from the policy file, exported, and an export applies as no change", async () => {
    expect(anchored).not.toBe(DEMO);
    await applyPolicyFile(db, anchored, { actor });
    const row = await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
    expect(row).toMatchObject({ billingAnchor: "2026-03-15", billingTimeZone: "America/Los_Angeles", thresholds: [50, 100] });
    const exported = parse(await exportPolicyFile(db));
    expect(exported.tenants.find((t: { slug: string }) => t.slug === "acme")).toMatchObject({ billing: { anchor: "2026-03-15", timeZone: "America/Los_Angeles" }, thresholds: [50, 100] });
    const again = await applyPolicyFile(db, await exportPolicyFile(db), { actor, dryRun: true });
    expect(planIsEmpty(again.plan)).toBe(true);
  });

  it("refuses an unknown time zone or an anchor that is not a date, naming the tenant and the field, and applies nothing", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    const audits = await db.auditEntry.count();
    const bad = DEMO.replace("    tier: free\n", "    tier: free\n    billing: { anchor: 2026-13-40, timeZone: Mars/Base }\n");
    const error = await applyPolicyFile(db, bad, { actor }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    const messages = (error as ServiceError).issues.map((i) => `${i.path}: ${i.message}`);
    expect(messages).toEqual(
      expect.arrayContaining([expect.stringMatching(/^tenants\[0\]\.billing\.anchor: tenant acme: expected a date/), expect.stringMatching(/^tenants\[0\]\.billing\.timeZone: tenant acme: unknown time zone "Mars\/Base"/)]),
    );
    await expect(setTenantBilling(db, { tenant: "acme", billing: { anchor: "2026-03-15", timeZone: "Nowhere/City" } }, editor)).rejects.toThrow(/tenant acme: unknown time zone/);
    expect(await db.auditEntry.count()).toBe(audits);
    expect((await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).billingAnchor).toBeNull();
  });

  it("is set and cleared by one audited edit; publish starts the new period at the publish instant; rollback and discard bring the old billing back", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    const t0 = Date.UTC(2026, 4, 1);
    await publishPolicy({ db, redis }, { actor, nowMs: t0 });

    expect(await setTenantBilling(db, { tenant: "acme", billing: { anchor: "2026-03-15", timeZone: "America/Los_Angeles" } }, editor)).toEqual({ tenant: "acme", changed: true });
    const audit = await db.auditEntry.findFirstOrThrow({ where: { action: "tenant.update" }, orderBy: { id: "desc" } });
    expect(audit.after).toMatchObject({ billing: { anchor: "2026-03-15", timeZone: "America/Los_Angeles" } });
    await setTenantThresholds(db, { tenant: "acme", thresholds: [90] }, editor);

    const t1 = Date.UTC(2026, 4, 20, 20, 45, 10);
    const v2 = await publishPolicy({ db, redis }, { actor, nowMs: t1 });
    expect(v2.status).toBe("published");
    const live = await livePolicy(redis);
    expect(live.tenants.acme).toMatchObject({ billing: { anchor: "2026-03-15", timeZone: "America/Los_Angeles" }, billingChange: { atMs: t1, previous: null }, thresholds: [90] });
    // Nothing changed since: publishing again is "unchanged" (the stamps carry, the checksum holds).
    expect((await publishPolicy({ db, redis }, { actor, nowMs: t1 + 60_000 })).status).toBe("unchanged");

    // A tier change is stamped with the old tier's quotas.
    await setTenantTier(db, { tenant: "acme", tier: "pro" }, editor);
    const t2 = t1 + 86_400_000;
    await publishPolicy({ db, redis }, { actor, nowMs: t2 });
    const v3 = await livePolicy(redis);
    expect(v3.tenants.acme?.planChange).toMatchObject({ atMs: t2, fromTier: "free", rule: "full" });
    expect(v3.tenants.acme?.billingChange).toEqual({ atMs: t1, previous: null });

    // Rollback to v1: the draft loses the billing again, and the live document says it changed at the rollback.
    const t3 = t2 + 1000;
    await rollbackPolicy({ db, redis }, { actor, toVersion: 1, nowMs: t3 });
    expect((await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).billingAnchor).toBeNull();
    const v4 = await db.policyVersion.findFirstOrThrow({ orderBy: { version: "desc" } });
    const doc = parseCompiledPolicy(v4.document);
    expect(doc.ok && doc.value.tenants.acme?.billingChange).toEqual({ atMs: t3, previous: { anchor: "2026-03-15", timeZone: "America/Los_Angeles" } });
    expect(doc.ok && doc.value.tenants.acme?.billing).toBeUndefined();

    // Discard: a draft edit of billing is reset to live.
    await setTenantBilling(db, { tenant: "acme", billing: { anchor: "2026-01-31", timeZone: "Europe/Paris" } }, editor);
    await discardDraft(db, editor);
    expect((await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).billingTimeZone).toBeNull();
    expect((await publishPolicy({ db, redis }, { actor, nowMs: t3 + 1000 })).status).toBe("unchanged");
  });
});
