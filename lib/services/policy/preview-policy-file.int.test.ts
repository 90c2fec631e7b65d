import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { freshDatabasePerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { serviceError } from "../testing/service-error";
import { exportPolicyObject } from "./export-policy-file";
import { applyPolicyFileText, previewPolicyFile } from "./preview-policy-file";
import { DEMO, draftDemo } from "./testing/policy-rows";

const FREE_API_KEY = `{ operation: "*", scope: api_key, algorithm: sliding_window_counter, limit: 100, window: 1m }`;
const product = { actor: "user:pm@example.com", role: "product" } as const;

const stores = freshDatabasePerFile();
let db: PrismaClient;
beforeAll(() => ({ db } = stores));
beforeEach(async () => {
  await draftDemo(db, "test");
  await db.auditEntry.deleteMany();
});

describe("applying a policy file from the Policy page", () => {
  it("the dry run lists each change with its fields and writes nothing; the apply then writes exactly that", async () => {
    const file = DEMO.replace(FREE_API_KEY, FREE_API_KEY.replace("limit: 100", "limit: 150"));
    expect(file).not.toBe(DEMO);
    const preview = await previewPolicyFile(db, file, product);
    expect(preview.refused).toEqual([]);
    expect(preview.lines).toEqual([{ kind: "changed", entity: "limit", key: "free/*/api_key/sliding_window_counter", text: "limit: 100 → 150" }]);
    expect(await db.auditEntry.count()).toBe(0);
    expect((await exportPolicyObject(db)).tiers![0].limits![0].limit).toBe(100);

    const applied = await applyPolicyFileText(db, file, product);
    expect(applied.applied).toBe(true);
    expect((await exportPolicyObject(db)).tiers![0].limits![0].limit).toBe(150);
    expect(await db.auditEntry.findMany({ select: { actor: true, action: true } })).toEqual([{ actor: product.actor, action: "limit.update" }]);
    // The same file again: nothing to change.
    expect((await previewPolicyFile(db, file, product)).lines).toEqual([]);
  });

  it("a file with a bad field is refused naming its path, and an empty one naming the file", async () => {
    const bad = DEMO.replace(FREE_API_KEY, FREE_API_KEY.replace("limit: 100", "limit: -5"));
    const error = await serviceError(previewPolicyFile(db, bad, product));
    expect(error.code).toBe("invalid_policy");
    expect(error.issues.map((i) => i.path)).toContain("tiers[0].limits[0].limit");
    expect(await serviceError(previewPolicyFile(db, "  \n", product))).toMatchObject({ code: "invalid_request", field: "file" });
  });

  it("a change the role may not make is named in the dry run, and the apply is refused", async () => {
    const file = DEMO.replace("defaults:\n  failureMode: open", "defaults:\n  failureMode: closed");
    const preview = await previewPolicyFile(db, file, product);
    expect(preview.lines).toHaveLength(1);
    expect(preview.refused).toEqual([expect.objectContaining({ field: expect.stringContaining("failureMode"), action: "failure_mode.set" })]);
    expect(await serviceError(applyPolicyFileText(db, file, product))).toMatchObject({ code: "forbidden" });
    expect(await db.auditEntry.count()).toBe(0);
  });
});
