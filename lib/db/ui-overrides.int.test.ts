/** The Tenants page's list of every override (#29 extra): soonest expiry first, an expired one on top, none-expiring last. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "@/test/helpers";
import type { PrismaClient } from "../generated/prisma/client";
import { listAllOverrides } from "./ui-overrides";

let fresh: FreshDatabase;
let db: PrismaClient;

beforeAll(async () => {
  fresh = await freshDatabase();
  db = fresh.db;
  await db.tier.create({ data: { id: "tier_t", name: "free" } });
  for (const slug of ["acme", "globex"]) await db.tenant.create({ data: { id: `ten_${slug}`, slug, name: slug, tierId: "tier_t" } });
  const o = (id: string, tenantId: string, expiresAt: string | null) => ({ id, tenantId, operation: "*", scope: "api_key", limit: 10n, expiresAt: expiresAt ? new Date(expiresAt) : null });
  await db.tenantOverride.createMany({
    data: [o("ovr_never", "ten_acme", null), o("ovr_later", "ten_globex", "2027-01-01T00:00:00Z"), o("ovr_past", "ten_globex", "2026-01-01T00:00:00Z"), o("ovr_soon", "ten_acme", "2026-12-24T00:00:00Z")],
  });
}, 120_000);
afterAll(async () => {
  await fresh?.drop();
});

describe("every override with its expiry", () => {
  it("lists all tenants' overrides, soonest expiry first, those without expiry last", async () => {
    const { rows, total } = await listAllOverrides(db);
    expect(total).toBe(4);
    expect(rows.map((r) => `${r.tenant}:${r.id}`)).toEqual(["globex:ovr_past", "acme:ovr_soon", "globex:ovr_later", "acme:ovr_never"]);
    expect(rows[0]).toMatchObject({ operation: "*", scope: "api_key", limit: 10, expiresAt: new Date("2026-01-01T00:00:00Z") });
    expect((await listAllOverrides(db, 2)).rows).toHaveLength(2);
  });
});
