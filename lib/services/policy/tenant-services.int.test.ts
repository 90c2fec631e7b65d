import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { freshDatabasePerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { createTenant } from "./create-tenant";
import { deleteTenantOverride } from "./delete-tenant-override";
import { ServiceError } from "../errors";
import { exportPolicyObject } from "./export-policy-file";
import { setTenantStatus } from "./set-tenant-status";
import { setTenantTier } from "./set-tenant-tier";
import { upsertTenantOverride } from "./upsert-tenant-override";
import { draftDemo } from "./testing/policy-rows";

const actor = "test:tenants";
const editor = { actor, role: "admin" } as const;

const stores = freshDatabasePerFile();
let db: PrismaClient;
beforeAll(() => ({ db } = stores));
beforeEach(async () => {
  await draftDemo(db, actor);
  await db.auditEntry.deleteMany();
});

async function tenantFromExport(slug: string) {
  const file = await exportPolicyObject(db);
  return file.tenants!.find((t) => t.slug === slug)!;
}

describe("tenant services", () => {
  it("suspends a tenant with one audit entry, and a repeat changes nothing", async () => {
    expect(await setTenantStatus(db, { tenant: "acme", status: "suspended" }, editor)).toMatchObject({ changed: true });
    expect((await tenantFromExport("acme")).status).toBe("suspended");
    expect(await setTenantStatus(db, { tenant: "acme", status: "suspended" }, editor)).toMatchObject({ changed: false });
    const audit = await db.auditEntry.findMany();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actor, action: "tenant.update", before: { status: "active" }, after: { status: "suspended" } });
  });

  it("moves a tenant to another tier and refuses an unknown one", async () => {
    await setTenantTier(db, { tenant: "acme", tier: "pro" }, editor);
    expect((await tenantFromExport("acme")).tier).toBe("pro");
    const error = await setTenantTier(db, { tenant: "acme", tier: "platinum" }, editor).catch((e: unknown) => e);
    expect((error as ServiceError).field).toBe("tier");
    expect(await db.auditEntry.count()).toBe(1);
  });

  it("creates a tenant in the UI's terms, refusing a taken slug, an unknown tier and a bad slug, naming the field (#29 extra)", async () => {
    expect(await createTenant(db, { slug: "zorg-industries", name: "Zorg Industries", tier: "pro" }, editor)).toEqual({ slug: "zorg-industries" });
    expect(await tenantFromExport("zorg-industries")).toMatchObject({ slug: "zorg-industries", name: "Zorg Industries", tier: "pro", status: "active" });
    expect(await db.auditEntry.count()).toBe(1);
    const taken = await createTenant(db, { slug: "zorg-industries", name: "Again", tier: "pro" }, editor).catch((e: unknown) => e);
    expect(taken).toMatchObject({ code: "conflict", field: "slug", message: "Tenant slug: zorg-industries is already taken" });
    const tier = await createTenant(db, { slug: "zorg-two", name: "Zorg Two", tier: "platinum" }, editor).catch((e: unknown) => e);
    expect(tier).toMatchObject({ field: "tier", message: "Tier: no tier named platinum" });
    const bad = await createTenant(db, { slug: "Not A Slug", name: "x", tier: "pro" }, editor).catch((e: unknown) => e);
    expect(bad).toMatchObject({ code: "invalid_policy", field: "slug" });
    expect(await db.auditEntry.count()).toBe(1);
  });

  it("refuses an override that would expire in the past, naming the Expires field (#29.9)", async () => {
    const nowMs = Date.parse("2026-12-05T12:00:00Z");
    const past = { operation: "search", scope: "api_key", limit: 99, expiresAt: "2026-12-05T11:59:00Z" };
    const error = await upsertTenantOverride(db, { tenant: "wonka", override: past, nowMs }, editor).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "invalid_request", field: "expiresAt" });
    expect((error as Error).message).toBe("Expires: 2026-12-05T11:59:00Z is in the past; choose a time after now, or leave it empty for no expiry");
    expect(await db.auditEntry.count()).toBe(0);
    const future = await upsertTenantOverride(db, { tenant: "wonka", override: { ...past, expiresAt: "2026-12-06T12:00:00Z" }, nowMs }, editor);
    expect(future.created).toBe(true);
  });

  it("creates, updates and deletes an override, refusing one the draft cannot compile", async () => {
    const created = await upsertTenantOverride(db, { tenant: "wonka", override: { operation: "search", scope: "api_key", limit: 99 } }, editor);
    expect(created.created).toBe(true);
    await upsertTenantOverride(db, { tenant: "wonka", id: created.id, override: { operation: "search", scope: "api_key", limit: 120 } }, editor);
    expect((await tenantFromExport("wonka")).overrides).toEqual([{ operation: "search", scope: "api_key", limit: 120 }]);

    // No tier limit for catalog/api_key to inherit a window from: refused with the path, nothing written.
    const bad = await upsertTenantOverride(db, { tenant: "wonka", override: { operation: "catalog", scope: "ip", limit: 5 } }, editor).catch((e: unknown) => e);
    expect((bad as ServiceError).code).toBe("invalid_policy");
    expect((bad as ServiceError).field).toMatch(/^tenants\[\d+\]\.overrides\[1\]\.window$/);
    expect((await tenantFromExport("wonka")).overrides).toHaveLength(1);

    // Another tenant cannot delete it by id.
    const foreign = await deleteTenantOverride(db, { tenant: "acme", id: created.id }, editor).catch((e: unknown) => e);
    expect((foreign as ServiceError).code).toBe("not_found");
    await deleteTenantOverride(db, { tenant: "wonka", id: created.id }, editor);
    expect((await tenantFromExport("wonka")).overrides).toEqual([]);
    expect((await db.auditEntry.findMany({ orderBy: { id: "asc" } })).map((a) => a.action)).toEqual([
      "override.create",
      "override.update",
      "override.delete",
    ]);
  });
});
