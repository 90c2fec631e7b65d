import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "@/test/helpers";
import type { PrismaClient } from "../generated/prisma/client";
import { getTenantDetail, listTenants, tenantListQuerySchema } from "./ui-tenants";

let fresh: FreshDatabase;
let db: PrismaClient;
const N = 10_000;

beforeAll(async () => {
  fresh = await freshDatabase();
  db = fresh.db;
  await db.tier.createMany({ data: [{ id: "tier_free", name: "free" }, { id: "tier_pro", name: "pro" }] });
  const rows = Array.from({ length: N }, (_, i) => ({
    id: `ten_${String(i).padStart(5, "0")}`,
    slug: `tenant-${String(i).padStart(5, "0")}`,
    name: i % 1000 === 7 ? `Special Widgets ${i}` : `Tenant ${i}`,
    tierId: i % 10 === 0 ? "tier_pro" : "tier_free",
    status: i % 100 === 0 ? ("suspended" as const) : ("active" as const),
  }));
  for (let i = 0; i < rows.length; i += 2_000) await db.tenant.createMany({ data: rows.slice(i, i + 2_000) });
  await db.apiKey.create({ data: { id: "key_1", tenantId: "ten_00003", name: "ci", hash: "h1", prefix: "sk_live_abcd" } });
  await db.$executeRawUnsafe("ANALYZE");
}, 120_000);

afterAll(async () => {
  await fresh.drop();
});

const q = (input: Record<string, unknown>) => tenantListQuerySchema.parse(input);

describe("the tenants list at 10,000 tenants", () => {
  it("pages through them in slug order with the total, quickly, even deep into the list", async () => {
    await listTenants(db, q({})); // warm up the connection
    const started = performance.now();
    const deep = await listTenants(db, q({ page: 150, pageSize: 50 }));
    const elapsedMs = performance.now() - started;
    expect(deep.total).toBe(N);
    expect(deep.rows[0].slug).toBe("tenant-07450");
    expect(deep.rows).toHaveLength(50);
    expect(elapsedMs).toBeLessThan(1_000);
  });

  it("filters by tier and status together, and counts only the matches", async () => {
    const r = await listTenants(db, q({ tier: "pro", status: "suspended" }));
    expect(r.total).toBe(100);
    expect(r.rows.every((t) => t.tier === "pro" && t.status === "suspended")).toBe(true);
  });

  it("searches slug and name, case-insensitively", async () => {
    const r = await listTenants(db, q({ q: "special widgets" }));
    expect(r.total).toBe(10);
    expect(r.rows[0].name).toMatch(/^Special Widgets/);
  });

  it("sorts by any column in both directions, and counts active keys", async () => {
    const desc = await listTenants(db, q({ sort: "slug", dir: "desc", pageSize: 10 }));
    expect(desc.rows[0].slug).toBe("tenant-09999");
    const first = await listTenants(db, q({ pageSize: 10 }));
    expect(first.rows[3]).toMatchObject({ slug: "tenant-00003", activeKeys: 1 });
  });

  it("ignores malformed query parameters instead of failing", () => {
    expect(q({ page: "-3", pageSize: "1e9", sort: "password", status: "gone" })).toMatchObject({ page: 1, pageSize: 50, sort: "slug", status: undefined });
  });

  it("looks a tenant's keys up with the tenant in the where", async () => {
    const t = await getTenantDetail(db, "tenant-00003");
    expect(t?.keys.map((k) => k.prefix)).toEqual(["sk_live_abcd"]);
    expect(await getTenantDetail(db, "no-such-tenant")).toBeNull();
  });
});
