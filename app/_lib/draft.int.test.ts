import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "@/test/helpers";
import { db } from "@/lib/db/client";
import { readDraftSpec } from "@/lib/db/ui-draft";
import { applyPolicyFile } from "@/lib/services/apply-policy-file";
import { editDraft } from "./draft";

let fresh: FreshDatabase;

beforeAll(async () => {
  fresh = await freshDatabase();
  process.env.DATABASE_URL = fresh.url;
  const demo = readFileSync(path.resolve(import.meta.dirname, "../../examples/demo-policy.yaml"), "utf8");
  await applyPolicyFile(db(), demo, { actor: "test" });
});

afterAll(async () => {
  await db().$disconnect();
  await fresh.drop();
});

describe("UI draft edits go through the apply use case", () => {
  it("saves a tier edit and writes its audit entry as the signed-in user", async () => {
    const r = await editDraft(
      "user:pm@example.com",
      (spec) => {
        spec.tiers.find((t) => t.name === "free")!.limits[0].limit = 42;
        return spec;
      },
      (spec) => ["tiers", spec.tiers.findIndex((t) => t.name === "free")],
    );
    expect(r).toMatchObject({ ok: true });
    const after = await readDraftSpec(db());
    expect(after.tiers.find((t) => t.name === "free")!.limits[0].limit).toBe(42);
    const audit = await db().auditEntry.findFirst({ where: { actor: "user:pm@example.com" }, orderBy: { at: "desc" } });
    expect(audit?.action).toMatch(/^limit\./);
  });

  it("refuses an invalid edit with the failing field re-rooted to the edited tier, and writes nothing", async () => {
    const before = await readDraftSpec(db());
    const r = await editDraft(
      "user:pm@example.com",
      (spec) => {
        spec.tiers.find((t) => t.name === "pro")!.limits[1].window = "soon";
        return spec;
      },
      (spec) => ["tiers", spec.tiers.findIndex((t) => t.name === "pro")],
    );
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.status).toBe(400);
      expect(r.issues).toContainEqual({ path: "limits.1.window", message: 'expected a duration like 30s, got "soon"' });
    }
    expect(await readDraftSpec(db())).toEqual(before);
  });

  it("reports a domain error from the edit itself without touching the database", async () => {
    const r = await editDraft("user:pm@example.com", () => ({ error: { path: "name", message: "a tier named free already exists" } }));
    expect(r).toEqual({ ok: false, status: 400, message: "a tier named free already exists", issues: [{ path: "name", message: "a tier named free already exists" }] });
  });

  it("keeps API keys when a draft edit is applied (the file lists none)", async () => {
    const keysBefore = await db().apiKey.count({ where: { revokedAt: null } });
    await editDraft("user:pm@example.com", (spec) => {
      spec.tenants.find((t) => t.slug === "acme")!.name = "Acme Corporation";
      return spec;
    });
    expect(await db().apiKey.count({ where: { revokedAt: null } })).toBe(keysBefore);
    expect(keysBefore).toBeGreaterThan(0);
  });

  it("two editors saving different tiers at the same moment both keep their change (no lost update)", async () => {
    const edit = (tier: string, limit: number) =>
      editDraft(`user:${tier}@example.com`, (spec) => {
        spec.tiers.find((t) => t.name === tier)!.limits[0].limit = limit;
        return spec;
      });
    const results = await Promise.all([edit("pro", 1234), edit("enterprise", 5678), edit("free", 77)]);
    expect(results.map((r) => r.ok)).toEqual([true, true, true]);
    const after = await readDraftSpec(db());
    expect(after.tiers.find((t) => t.name === "pro")!.limits[0].limit).toBe(1234);
    expect(after.tiers.find((t) => t.name === "enterprise")!.limits[0].limit).toBe(5678);
    expect(after.tiers.find((t) => t.name === "free")!.limits[0].limit).toBe(77);
  });
});
