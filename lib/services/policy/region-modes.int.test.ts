/**
 * `regions` on limits and global caps through PostgreSQL (docs/regions.md): apply stores it and its
 * plan names the field, export writes it back, re-applying the export changes nothing, and publish
 * carries it in the document every region's decision servers read.
 */
import { Redis } from "ioredis";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { freshStoresPerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { readCurrentPolicy } from "@/lib/redis/policy";
import { changedFields } from "@/lib/policy/plan";
import { applyPolicyFile } from "./apply-policy-file";
import { exportPolicyFile } from "./export-policy-file";
import { publishPolicy } from "./publish-policy";
import { clearPolicy } from "./testing/policy-rows";

const actor = "test:region-modes";
const policy = (regions: string) => `
version: 1
operations:
  - { name: orders, match: ["GET /v1/orders"] }
tiers:
  - name: free
    limits:
      - { operation: "*", scope: tenant, algorithm: fixed_window, limit: 1000, window: 1m${regions ? `, regions: ${regions}` : ""} }
globalCaps:
  - { operation: orders, limit: 50, window: 1m${regions ? `, regions: ${regions}` : ""} }
tenants:
  - { slug: acme, name: Acme, tier: free }
`;

const stores = freshStoresPerFile("rmodes");
let db: PrismaClient;
let redis: Redis;
beforeAll(() => ({ db, redis } = stores));
beforeEach(() => clearPolicy(db));

describe("regions through apply, export and publish", () => {
  it("apply names the changed field, export writes it back, re-applying the export changes nothing, publish carries it", async () => {
    await applyPolicyFile(db, policy(""), { actor });
    const result = await applyPolicyFile(db, policy("split"), { actor });
    const changed = result.plan.changed.map((c) => [c.entity, changedFields(c)]);
    expect(changed).toEqual([["limit", ["regions"]], ["globalCap", ["regions"]]]);

    const exported = parse(await exportPolicyFile(db)) as { tiers: { limits: { regions?: string }[] }[]; globalCaps: { regions?: string }[] };
    expect(exported.tiers[0]!.limits[0]!.regions).toBe("split");
    expect(exported.globalCaps[0]!.regions).toBe("split");
    const again = await applyPolicyFile(db, await exportPolicyFile(db), { actor });
    expect([again.plan.created, again.plan.changed, again.plan.deleted].flat()).toEqual([]);

    await publishPolicy({ db, redis }, { actor });
    const live = await readCurrentPolicy(redis);
    expect(live.status).toBe("ok");
    if (live.status !== "ok") return;
    expect(live.policy.tiers.free!.limits[0]!.regions).toBe("split");
    expect(live.policy.globalCaps[0]!.regions).toBe("split");
  });

  it("`regions: local` written out is the default: no change in the plan", async () => {
    await applyPolicyFile(db, policy(""), { actor });
    const result = await applyPolicyFile(db, policy("local"), { actor, dryRun: true });
    expect([result.plan.created, result.plan.changed, result.plan.deleted].flat()).toEqual([]);
  });
});
