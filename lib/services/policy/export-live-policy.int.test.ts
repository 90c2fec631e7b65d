/**
 * The Policy page's "Policy as YAML" (#29): the draft and the live version export apart; the live
 * file is what was published, whatever the draft has become since.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { freshDatabasePerFile } from "@/test/helpers";
import type { PrismaClient } from "../../generated/prisma/client";
import { applyPolicyFile } from "./apply-policy-file";
import { exportLivePolicyFile, exportPolicyFile } from "./export-policy-file";
import { publishPolicy } from "./publish-policy";
import { setTenantStatus } from "./set-tenant-status";
import { DEMO } from "./testing/policy-rows";

const actor = "test:export";

const stores = freshDatabasePerFile();
let db: PrismaClient;
beforeAll(() => ({ db } = stores));

const statusOf = (yaml: string, slug: string) => (parse(yaml) as { tenants: { slug: string; status?: string }[] }).tenants.find((t) => t.slug === slug)?.status ?? "active";

describe("exporting the live version and the draft", () => {
  it("refuses the live export before anything is published, then exports what was published while the draft moves on", async () => {
    await applyPolicyFile(db, DEMO, { actor });
    await expect(exportLivePolicyFile(db)).rejects.toMatchObject({ code: "not_found" });
    const published = await publishPolicy({ db, redis: null }, { actor });
    await setTenantStatus(db, { tenant: "acme", status: "suspended" }, { actor, role: "admin" });
    const live = await exportLivePolicyFile(db);
    expect(live.version).toBe(published.version);
    expect(live.yaml.startsWith(`# Live policy v${published.version}.`)).toBe(true);
    expect(statusOf(live.yaml, "acme")).toBe("active");
    expect(statusOf(await exportPolicyFile(db), "acme")).toBe("suspended");
    // Applying the live export to the draft undoes exactly the unpublished change.
    const plan = await applyPolicyFile(db, live.yaml, { actor, dryRun: true });
    expect(plan.plan.created).toEqual([]);
    expect(plan.plan.deleted).toEqual([]);
    expect(plan.plan.changed.map((c) => `${c.entity} ${c.key}`)).toEqual(["tenant acme"]);
  });
});
