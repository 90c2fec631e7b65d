import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "@/test/helpers";
import type { PrismaClient } from "../generated/prisma/client";
import { AUDIT_PAGE_SIZE, auditQuerySchema, listAuditEntries, type AuditRow } from "./ui-policy";

let fresh: FreshDatabase;
let db: PrismaClient;

const T0 = Date.parse("2026-03-01T10:00:00Z");
const MINUTE = 60_000;
// Distinct times; actors and entities out of time order, so each sort gives a different order.
const ENTRIES = [
  { at: T0 + 0 * MINUTE, actor: "user:zoe@example.com", action: "tier.create", entity: "tier" },
  { at: T0 + 1 * MINUTE, actor: "cli:ops", action: "tenant.update", entity: "tenant" },
  { at: T0 + 2 * MINUTE, actor: "user:amy@example.com", action: "api_key.create", entity: "api_key" },
  { at: T0 + 3 * MINUTE, actor: "cli:ops", action: "policy.publish", entity: "policy" },
  { at: T0 + 4 * MINUTE, actor: "token:sl_adm_1234", action: "limit.update", entity: "limit" },
];
// One apply writes many entries at one instant: 2 pages' worth with the same `at` and actor.
const BULK = AUDIT_PAGE_SIZE + 20;
const BULK_AT = T0 - 60 * MINUTE;
const BULK_ACTOR = "user:zz-apply@example.com";

beforeAll(async () => {
  fresh = await freshDatabase();
  db = fresh.db;
  await db.auditEntry.createMany({ data: ENTRIES.map((e) => ({ ...e, at: new Date(e.at) })) });
  await db.auditEntry.createMany({
    data: Array.from({ length: BULK }, (_, i) => ({ at: new Date(BULK_AT), actor: BULK_ACTOR, action: "limit.create", entity: "limit", entityId: `lim_${i}` })),
  });
}, 120_000);

afterAll(async () => {
  await fresh.drop();
});

const q = (input: Record<string, unknown>) => auditQuerySchema.parse(input);
const recent = (rows: AuditRow[]) => rows.filter((r) => r.at.getTime() >= T0);

describe("sorting the audit log (in the database, across pages)", () => {
  it("lists newest first by default", async () => {
    const { rows, total } = await listAuditEntries(db, q({}));
    expect(total).toBe(ENTRIES.length + BULK);
    expect(recent(rows).map((r) => r.action)).toEqual([...ENTRIES].reverse().map((e) => e.action));
    const times = rows.map((r) => r.at.getTime());
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it("sorts by time ascending: the oldest entry of the whole log comes first", async () => {
    const { rows } = await listAuditEntries(db, q({ sort: "at", dir: "asc" }));
    expect(rows[0]?.at.getTime()).toBe(BULK_AT);
    const last = await listAuditEntries(db, q({ sort: "at", dir: "asc", page: 2 }));
    expect(recent(last.rows).map((r) => r.action)).toEqual(ENTRIES.map((e) => e.action));
  });

  it("sorts by actor, then newest first within an actor", async () => {
    const { rows } = await listAuditEntries(db, q({ sort: "actor", dir: "asc" }));
    const actors = recent(rows).map((r) => `${r.actor} ${r.action}`);
    expect(actors).toEqual([
      "cli:ops policy.publish",
      "cli:ops tenant.update",
      "token:sl_adm_1234 limit.update",
      "user:amy@example.com api_key.create",
      "user:zoe@example.com tier.create",
    ]);
    const desc = await listAuditEntries(db, q({ sort: "actor", dir: "desc" }));
    expect(desc.rows.every((r) => r.actor === BULK_ACTOR)).toBe(true);
    const descLast = await listAuditEntries(db, q({ sort: "actor", dir: "desc", page: 2 }));
    expect(recent(descLast.rows).map((r) => `${r.actor} ${r.action}`)).toEqual([
      "user:zoe@example.com tier.create",
      "user:amy@example.com api_key.create",
      "token:sl_adm_1234 limit.update",
      "cli:ops policy.publish",
      "cli:ops tenant.update",
    ]);
  });

  it("sorts by entity in both directions", async () => {
    const asc = await listAuditEntries(db, q({ sort: "entity", dir: "asc" }));
    expect(asc.rows[0]?.entity).toBe("api_key");
    const desc = await listAuditEntries(db, q({ sort: "entity", dir: "desc" }));
    expect(desc.rows.slice(0, 2).map((r) => r.entity)).toEqual(["tier", "tenant"]);
  });

  it("pages through entries that tie on the sort column without repeating or skipping one", async () => {
    for (const sort of ["actor", "at", "entity"] as const) {
      const pages = await Promise.all([1, 2].map((page) => listAuditEntries(db, q({ sort, dir: "asc", page }))));
      const ids = pages.flatMap((p) => p.rows.map((r) => r.id));
      expect(ids, sort).toHaveLength(ENTRIES.length + BULK);
      expect(new Set(ids).size, sort).toBe(ENTRIES.length + BULK);
    }
  });

  it("falls back to newest first for an unknown column or direction, instead of failing", async () => {
    const bad = q({ sort: "before; DROP TABLE \"AuditEntry\"", dir: "sideways", page: "x" });
    expect(bad).toMatchObject({ sort: "at", dir: "desc", page: 1 });
    expect(q({ sort: ["actor", "entity"], dir: 7 })).toMatchObject({ sort: "at", dir: "desc" });
    const [fallback, byDefault] = await Promise.all([listAuditEntries(db, bad), listAuditEntries(db, q({}))]);
    expect(fallback.rows.map((r) => r.id)).toEqual(byDefault.rows.map((r) => r.id));
  });
});
