import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { freshDatabasePerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { parseCompiledPolicy } from "@/lib/policy/compiled-schema";
import { applyPolicyFile, planPolicyFile } from "./apply-policy-file";
import { ServiceError } from "../errors";
import { exportPolicyFile } from "./export-policy-file";
import { publishPolicy } from "./publish-policy";
import { clearPolicy, DEMO as DEMO_TEXT } from "./testing/policy-rows";

const DEMO = parse(DEMO_TEXT) as Record<string, unknown>;
const actor = "test:requirements";
const REQUIREMENTS = {
  accuracy: "4%",
  rejectP95: "40ms",
  operations: [{ operation: "export", failureMode: "closed", boundaryBurst: "forbidden" }],
  limits: [{ tier: "free", operation: "*", scope: "api_key", accuracy: "2%" }],
};

const stores = freshDatabasePerFile();
let db: PrismaClient;
beforeAll(() => ({ db } = stores));
beforeEach(() => clearPolicy(db));

describe("the requirements block through apply, export and publish", () => {
  it("is stored by apply, exported as written, and an exported file plans no change", async () => {
    const applied = await applyPolicyFile(db, { ...DEMO, requirements: REQUIREMENTS }, { actor });
    expect(applied.plan.created.some((c) => c.entity === "requirements")).toBe(true);
    const exported = parse(await exportPolicyFile(db)) as Record<string, unknown>;
    expect(exported.requirements).toEqual(REQUIREMENTS);
    const plan = await planPolicyFile(db, stringify(exported));
    expect(plan.created.length + plan.changed.length + plan.deleted.length).toBe(0);
    const audit = await db.auditEntry.findFirst({ where: { action: "requirements.create" } });
    expect(audit?.after).toMatchObject({ accuracy: "4%" });
  });

  it("is published with the version, so a change of requirements alone is a new version", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    const v1 = await publishPolicy({ db, redis: null }, { actor });
    await applyPolicyFile(db, { ...DEMO, requirements: REQUIREMENTS }, { actor });
    const v2 = await publishPolicy({ db, redis: null }, { actor });
    expect(v2.status).toBe("published");
    expect(v2.version).toBe(v1.version + 1);
    const row = await db.policyVersion.findUniqueOrThrow({ where: { version: v2.version } });
    const doc = parseCompiledPolicy(row.document);
    expect(doc.ok && doc.value.requirements).toEqual({
      accuracy: 0.04,
      rejectP95Ms: 40,
      operations: [{ operation: "export", failureMode: "closed", boundaryBurst: "forbidden" }],
      limits: [{ tier: "free", operation: "*", scope: "api_key", accuracy: 0.02 }],
    });
    const v1doc = parseCompiledPolicy((await db.policyVersion.findUniqueOrThrow({ where: { version: v1.version } })).document);
    expect(v1doc.ok && v1doc.value.requirements).toBeUndefined();
  });

  it("is removed by a file without it, and refused with its path when it names an unknown operation", async () => {
    await applyPolicyFile(db, { ...DEMO, requirements: REQUIREMENTS }, { actor });
    const removed = await applyPolicyFile(db, DEMO, { actor });
    expect(removed.plan.deleted.map((c) => c.entity)).toEqual(["requirements"]);
    expect(parse(await exportPolicyFile(db)).requirements).toBeUndefined();
    const bad = { ...DEMO, requirements: { operations: [{ operation: "exports", failureMode: "closed" }] } };
    const error = await applyPolicyFile(db, bad, { actor }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).issues).toEqual([{ path: "requirements.operations[0].operation", message: 'unknown operation "exports"' }]);
  });
});
