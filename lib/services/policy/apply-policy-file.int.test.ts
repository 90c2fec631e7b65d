import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { freshDatabasePerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { planIsEmpty } from "@/lib/policy/plan";
import { applyPolicyFile, planPolicyFile } from "./apply-policy-file";
import { ServiceError } from "../errors";
import { exportPolicyFile } from "./export-policy-file";
import { hashSecret } from "../access/secrets";
import { clearPolicy, DEMO } from "./testing/policy-rows";

const actor = "test:apply";

const stores = freshDatabasePerFile();
let db: PrismaClient;
beforeAll(() => ({ db } = stores));

async function counts() {
  const [operations, tiers, limits, quotas, caps, tenants, overrides, keys, audit, settings] = await Promise.all([
    db.operation.count(), db.tier.count(), db.limit.count(), db.quota.count(), db.globalCap.count(),
    db.tenant.count(), db.tenantOverride.count(), db.apiKey.count(), db.auditEntry.count(), db.policySettings.count(),
  ]);
  return { operations, tiers, limits, quotas, caps, tenants, overrides, keys, audit, settings };
}

beforeEach(() => clearPolicy(db));

describe("applyPolicyFile", () => {
  it("creates the whole demo policy, with an audit entry per change, and stores keys only as hashes", async () => {
    const result = await applyPolicyFile(db, DEMO, { actor });
    expect(result.applied).toBe(true);
    const c = await counts();
    expect(c).toMatchObject({ operations: 7, tiers: 3, tenants: 12, caps: 1, settings: 1 });
    const total = result.plan.created.length + result.plan.changed.length + result.plan.deleted.length;
    expect(c.audit).toBe(total);
    const key = await db.apiKey.findFirstOrThrow({ where: { name: "ci", tenant: { slug: "acme" } } });
    expect(key.hash).toBe(hashSecret("sk_test_acme_ci_0001"));
    expect(key.prefix).toBe("sk_test_acme");
    const rows = await db.$queryRawUnsafe<{ n: bigint }[]>(
      `SELECT count(*) AS n FROM "ApiKey" WHERE hash LIKE 'sk_%' OR prefix = 'sk_test_acme_ci_0001'`,
    );
    expect(Number(rows[0].n)).toBe(0);
    const audit = await db.auditEntry.findFirstOrThrow({ where: { action: "limit.create" } });
    expect(audit.actor).toBe(actor);
    expect(audit.after).toMatchObject({ tier: expect.any(String), scope: expect.any(String) });
  });

  it("is idempotent: the second apply plans nothing and writes nothing, not even audit entries", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    const before = await counts();
    const tenantBefore = await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
    const second = await applyPolicyFile(db, DEMO, { actor });
    expect(planIsEmpty(second.plan)).toBe(true);
    expect(second.applied).toBe(false);
    expect(await counts()).toEqual(before);
    expect((await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).updatedAt).toEqual(tenantBefore.updatedAt);
  });

  it("is transactional: a file with one bad field writes nothing and names the path", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    const before = await counts();
    const bad = parse(DEMO);
    bad.tiers[0].weight = 7; // a valid change that must not be written either
    bad.tiers[0].limits[3].leaseTtl = "soon";
    const error = await applyPolicyFile(db, bad, { actor }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).code).toBe("invalid_policy");
    expect((error as ServiceError).issues).toContainEqual({
      path: "tiers[0].limits[3].leaseTtl",
      message: 'expected a duration like 30s, got "soon"',
    });
    expect(await counts()).toEqual(before);
    expect((await db.tier.findUniqueOrThrow({ where: { name: "free" } })).weight).toBe(1);
  });

  it("refuses a key plaintext already used by another key, naming its path, and writes nothing", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    const before = await counts();
    const file = parse(DEMO);
    file.tiers[0].weight = 9;
    // Same plaintext on two tenants: refused before writing, with the path of the second one.
    file.tenants[1].keys.push({ name: "dup", key: "sk_test_acme_ci_0001" });
    const error = await applyPolicyFile(db, file, { actor }).catch((e: unknown) => e);
    expect((error as ServiceError).issues[0].path).toBe("tenants[1].keys[2].key");
    expect(await counts()).toEqual(before);
  });

  it("rolls back every earlier write when the database refuses one mid-way", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    const before = await counts();
    // A trigger makes PostgreSQL refuse one tenant insert, after tiers and limits were written.
    await db.$executeRawUnsafe(`CREATE OR REPLACE FUNCTION refuse_boom() RETURNS trigger AS $$
      BEGIN IF NEW.slug = 'boom' THEN RAISE EXCEPTION 'refused by test trigger'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`);
    await db.$executeRawUnsafe(`CREATE TRIGGER refuse_boom BEFORE INSERT ON "Tenant" FOR EACH ROW EXECUTE FUNCTION refuse_boom()`);
    try {
      const file = parse(DEMO);
      file.tiers[0].weight = 9;
      file.tiers.push({ name: "platinum", weight: 50, limits: [{ operation: "*", scope: "tenant", algorithm: "fixed_window", limit: 1, window: "1s" }] });
      file.tenants.push({ slug: "boom", name: "Boom", tier: "platinum" });
      await expect(applyPolicyFile(db, file, { actor })).rejects.toThrow(/refused by test trigger/);
    } finally {
      await db.$executeRawUnsafe(`DROP TRIGGER refuse_boom ON "Tenant"`);
    }
    expect(await counts()).toEqual(before);
    expect(await db.tier.findUnique({ where: { name: "platinum" } })).toBeNull();
    expect((await db.tier.findUniqueOrThrow({ where: { name: "free" } })).weight).toBe(1);
  });

  it("dry run plans the changes and writes nothing", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    const before = await counts();
    const file = parse(DEMO);
    file.tiers[0].limits[0].limit = 150;
    file.tenants = file.tenants.filter((t: { slug: string }) => t.slug !== "oscorp");
    file.operations.push({ name: "reports", match: ["GET /v1/reports"] });
    const dry = await applyPolicyFile(db, file, { actor, dryRun: true });
    expect(dry.applied).toBe(false);
    expect(dry.plan.changed).toContainEqual(
      expect.objectContaining({ entity: "limit", key: "free/*/api_key/sliding_window_counter", before: expect.objectContaining({ limit: 100 }), after: expect.objectContaining({ limit: 150 }) }),
    );
    expect(dry.plan.deleted.map((d) => `${d.entity} ${d.key}`)).toEqual(expect.arrayContaining(["tenant oscorp", "key oscorp/ci"]));
    expect(dry.plan.created.map((d) => `${d.entity} ${d.key}`)).toEqual(["operation reports"]);
    expect(await counts()).toEqual(before);
    expect(await planPolicyFile(db, file)).toEqual(dry.plan);

    const real = await applyPolicyFile(db, file, { actor });
    expect(real.plan).toEqual(dry.plan);
    expect(await db.tenant.findUnique({ where: { slug: "oscorp" } })).toBeNull();
    expect((await db.limit.findFirstOrThrow({ where: { tier: { name: "free" }, operation: "*", scope: "api_key" } })).limit).toBe(150);
    expect(planIsEmpty((await applyPolicyFile(db, file, { actor })).plan)).toBe(true);
  });

  it("leaves keys the file does not list alone, and never resurrects a revoked key", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    const acme = await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
    await db.apiKey.create({ data: { id: "key_extra", tenantId: acme.id, name: "extra", hash: hashSecret("sk_live_extra_0000000001"), prefix: "sk_live_extr" } });
    await db.apiKey.updateMany({ where: { tenantId: acme.id, name: "web" }, data: { revokedAt: new Date() } });
    const again = await applyPolicyFile(db, DEMO, { actor });
    expect(planIsEmpty(again.plan)).toBe(true);
    expect(again.plan.warnings.join()).toMatch(/acme\/web is revoked/);
    expect(await db.apiKey.findUnique({ where: { id: "key_extra" } })).not.toBeNull();
    expect((await db.apiKey.findFirstOrThrow({ where: { tenantId: acme.id, name: "web" } })).revokedAt).not.toBeNull();
  });

  it("rotates a key whose plaintext changed, and generates a key listed without one", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    const file = parse(DEMO);
    file.tenants[0].keys[0].key = "sk_test_acme_ci_0002";
    file.tenants[0].keys.push({ name: "new" });
    const result = await applyPolicyFile(db, file, { actor });
    expect(result.plan.changed.map((c) => c.key)).toEqual(["acme/ci"]);
    expect(result.generatedKeys).toHaveLength(1);
    expect(result.generatedKeys[0]).toMatchObject({ tenant: "acme", name: "new" });
    const generated = await db.apiKey.findFirstOrThrow({ where: { name: "new" } });
    expect(generated.hash).toBe(hashSecret(result.generatedKeys[0].key));
    expect(JSON.stringify(await db.auditEntry.findMany({ select: { before: true, after: true } }))).not.toContain(result.generatedKeys[0].key);
  });

  it("export prints no secrets and round-trips through apply with an empty plan", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    const exported = await exportPolicyFile(db);
    expect(exported).not.toMatch(/sk_test_/);
    const plan = await planPolicyFile(db, exported);
    expect(plan).toEqual({ created: [], changed: [], deleted: [], warnings: [] });
  });

  it("names the line of a YAML syntax error", async () => {
    const error = await applyPolicyFile(db, "version: 1\ntiers: [\n  - name: free\n", { actor }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).field).toMatch(/^line \d+, column \d+$/);
  });
});
