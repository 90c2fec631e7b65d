/**
 * Tokens as the Settings page and the audit log show them (#29.9): a token has a name a person
 * gave it, a service token's audit entry claims no role, and the log's search finds a revocation
 * by its action, the token's name and its prefix.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "@/test/helpers";
import type { PrismaClient } from "../../generated/prisma/client";
import { auditQuerySchema, listAuditEntries } from "../../db/ui-policy";
import { auditSearchTargets } from "../observe/audit-view";
import { createApiToken } from "./create-api-token";
import { revokeApiToken } from "./revoke-api-token";

let fresh: FreshDatabase;
let db: PrismaClient;
const actor = "user:admin@example.com";

beforeAll(async () => {
  fresh = await freshDatabase();
  db = fresh.db;
}, 120_000);

afterAll(async () => {
  await fresh?.drop();
});

const search = async (q: string) => {
  const query = auditQuerySchema.parse({ q });
  return (await listAuditEntries(db, query, await auditSearchTargets(db, q))).rows.map((r) => r.action);
};

describe("API tokens, named and audited truthfully", () => {
  it("refuses an empty or blank name instead of making one up", async () => {
    for (const name of ["", "   "]) {
      const error = await createApiToken({ db }, { kind: "service", name }, actor).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "invalid_request", field: "name" });
      expect((error as Error).message).toBe("Name: enter a name for the token");
    }
    expect(await db.apiToken.count()).toBe(0);
  });

  it("a service token's audit entry names no role (the role is an admin token's)", async () => {
    const t = await createApiToken({ db }, { kind: "service", name: "edge-gateway" }, actor);
    const entry = await db.auditEntry.findFirstOrThrow({ where: { action: "token.create", entityId: t.id } });
    expect(entry.after).toEqual({ kind: "service", name: "edge-gateway", prefix: t.prefix });
    const admin = await createApiToken({ db }, { kind: "admin", name: "ops-script", role: "sre" }, actor);
    const adminEntry = await db.auditEntry.findFirstOrThrow({ where: { action: "token.create", entityId: admin.id } });
    expect(adminEntry.after).toMatchObject({ kind: "admin", role: "sre" });
  });

  it("a role given for a service token is refused, not stored", async () => {
    const error = await createApiToken({ db }, { kind: "service", name: "gw2", role: "admin" }, actor).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "invalid_request", field: "role" });
  });

  it("audit search finds token.revoke by its action, the token's name and its prefix", async () => {
    const t = await createApiToken({ db }, { kind: "service", name: "old-gateway" }, actor);
    await revokeApiToken({ db }, { id: t.id }, actor);
    expect(await search("token.revoke")).toContain("token.revoke");
    expect(await search("old-gateway")).toEqual(expect.arrayContaining(["token.create", "token.revoke"]));
    expect(await search(t.prefix)).toEqual(expect.arrayContaining(["token.create", "token.revoke"]));
  });
});
