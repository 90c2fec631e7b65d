import { Redis } from "ioredis";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { freshStoresPerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import type { CompiledPolicy } from "@/lib/policy/compiled";
import { applyFailureModes } from "./apply-failure-modes";
import { ServiceError } from "../errors";
import { compileDraft, publishPolicy } from "./publish-policy";
import { setTenantTier } from "./set-tenant-tier";
import { draftDemo, livePolicy } from "./testing/policy-rows";

const actor = "test:failure-modes";
const sre = { actor: "user:sre@example.com", role: "sre" } as const;
const product = { actor: "user:pm@example.com", role: "product" } as const;

const stores = freshStoresPerFile("fm");
let db: PrismaClient;
let redis: Redis;
beforeAll(() => ({ db, redis } = stores));
beforeEach(() => draftDemo(db, actor));

describe("applyFailureModes", () => {
  it("an SRE's change goes live as a version that changes only failure modes; the product team's draft changes stay in the draft", async () => {
    await publishPolicy({ db, redis }, { actor });
    const before = await livePolicy(redis);
    await setTenantTier(db, { tenant: "wonka", tier: "pro" }, product);

    const result = await applyFailureModes(
      { db, redis },
      { default: "closed", operations: [{ name: "search", failureMode: null }, { name: "export", failureMode: "open" }] },
      sre,
    );
    expect(result).toMatchObject({ status: "published", version: 2, previousVersion: 1 });
    const after = await livePolicy(redis);
    expect(after.version).toBe(2);
    // Only failure modes differ: the default, search (now following it), export, and every operation that follows the default.
    const strip = (d: CompiledPolicy) => ({ ...d, version: 0, checksum: "", createdAt: "", defaults: null, operations: Object.values(d.operations).map((o) => ({ ...o, failureMode: null })) });
    expect(strip(after)).toEqual(strip(before));
    expect(after.tenants.wonka.tier).toBe("free");
    expect(after.defaults.failureMode).toBe("closed");
    expect(after.operations.search.failureMode).toBe("closed");
    expect(after.operations.export.failureMode).toBe("open");
    expect(after.operations["orders-read"].failureMode).toBe("closed");
    expect(result.changed).toContainEqual({ field: "operations.search.failureMode", before: "local", after: "closed" });

    // The draft keeps the pending tier move and has the new failure modes too.
    const draft = await compileDraft(db);
    expect(draft.tenants.wonka.tier).toBe("pro");
    expect(draft.defaults.failureMode).toBe("closed");
    expect(draft.operations.search.failureMode).toBe("closed");
    expect(draft.operations.export.failureMode).toBe("open");

    const audit = await db.auditEntry.findFirstOrThrow({ where: { action: "failure_mode.apply" } });
    expect(audit).toMatchObject({ actor: sre.actor, entityId: "2" });
    expect(audit.after).toMatchObject({ "defaults.failureMode": "closed", "operations.export.failureMode": "open" });
    expect(await db.auditEntry.count({ where: { action: "policy.publish", actor: sre.actor } })).toBe(1);

    // Applying the same again changes nothing and makes no version.
    const again = await applyFailureModes({ db, redis }, { default: "closed", operations: [{ name: "export", failureMode: "open" }] }, sre);
    expect(again).toMatchObject({ status: "unchanged", version: 2 });
  });

  it("is refused to roles without failure_mode.set, for operations not live, and for bad input naming the field", async () => {
    await publishPolicy({ db, redis }, { actor });
    for (const role of ["product", "billing"] as const) {
      const e = await applyFailureModes({ db, redis }, { default: "closed" }, { actor: "x", role }).catch((x: unknown) => x);
      expect((e as ServiceError).code).toBe("forbidden");
    }
    const unknown = await applyFailureModes({ db, redis }, { operations: [{ name: "nope", failureMode: "open" }] }, sre).catch((x: unknown) => x);
    expect(unknown).toMatchObject({ code: "not_found", field: "operations[0].name" });
    const bad = await applyFailureModes({ db, redis }, { default: "sometimes" }, sre).catch((x: unknown) => x);
    expect(bad).toMatchObject({ code: "invalid_request", field: "default" });
    expect(await db.policyVersion.count()).toBe(1);
  });
});
