/**
 * The `rateLimitService` section lives with the rest of the policy: applied into the draft
 * (PostgreSQL rows), validated with paths, exported, published (PostgreSQL and Redis), and reset
 * by rollback and discard, on real PostgreSQL and Redis.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { Redis } from "ioredis";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { freshStoresPerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { tierTenants } from "@/lib/db/usage-repo";
import { readCurrentPolicy } from "@/lib/redis/policy";
import { applyPolicyFile } from "./apply-policy-file";
import { discardDraft } from "./discard-draft";
import { ServiceError } from "../errors";
import { exportPolicyFile } from "./export-policy-file";
import { importEnvoyConfigs } from "./import-envoy";
import { compileDraft, publishPolicy } from "./publish-policy";
import { rollbackPolicy } from "./rollback-policy";

const DEMO = readFileSync(path.resolve(import.meta.dirname, "../../../examples/demo-policy.yaml"), "utf8");
const MESSAGING = `domain: messaging
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5
  - key: to_number
    rate_limit:
      unit: Day
      requests_per_unit: 100
`;
const actor = "test:envoy";

const stores = freshStoresPerFile("envoy");
let db: PrismaClient;
let redis: Redis;
beforeAll(() => ({ db, redis } = stores));
beforeEach(async () => {
  await db.policyVersion.deleteMany();
  await applyPolicyFile(db, DEMO, { actor });
});

/** The demo policy with `messaging` imported into it, as `sluice import envoy --into` prints it. */
function demoWithMessaging(text = MESSAGING): string {
  const r = importEnvoyConfigs([{ name: "messaging.yaml", text }], { into: { name: "demo-policy.yaml", text: DEMO } });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.text;
}

/** The policy file with the messaging domain's `to_number` rule set to `perDay`. */
function withPerDay(perDay: number): string {
  const file = parse(demoWithMessaging());
  file.rateLimitService.domains[0].descriptors[1].rate_limit.requests_per_unit = perDay;
  return stringify(file);
}

describe("Envoy domains in the draft", () => {
  it("are applied with the rest of the policy, one row and one audit entry per domain, and exported as written", async () => {
    const result = await applyPolicyFile(db, demoWithMessaging(), { actor });
    expect(result.plan.created).toEqual([expect.objectContaining({ entity: "envoyDomain", key: "messaging", path: "rateLimitService.domains[0]" })]);
    expect(await db.envoyDomain.findMany({ select: { domain: true } })).toEqual([{ domain: "messaging" }]);
    expect(await db.auditEntry.count({ where: { action: "envoyDomain.create", entityId: { not: null } } })).toBeGreaterThan(0);

    const exported = await exportPolicyFile(db);
    expect(parse(exported).rateLimitService.domains).toEqual([parse(MESSAGING)]);
    const again = await applyPolicyFile(db, exported, { actor });
    expect(again.plan).toMatchObject({ created: [], changed: [], deleted: [] });
  });

  it("refuse an invalid section with its path and write nothing", async () => {
    const file = parse(demoWithMessaging());
    file.rateLimitService.domains[0].descriptors[1].rate_limit.unlimited = true;
    const error = await applyPolicyFile(db, stringify(file), { actor }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).issues).toContainEqual({ path: "rateLimitService.domains[0].descriptors[1].rate_limit.unit", message: expect.stringMatching(/unlimited/) });
    expect(await db.envoyDomain.count()).toBe(0);
  });

  it("need failure_mode.set to change a rule's failureMode, even in a file", async () => {
    await applyPolicyFile(db, demoWithMessaging(), { actor });
    const file = parse(demoWithMessaging());
    file.rateLimitService.domains[0].descriptors[1].rate_limit.failureMode = "closed";
    const error = await applyPolicyFile(db, stringify(file), { actor: "user:pm@example.com", role: "product" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "forbidden", message: expect.stringMatching(/^rateLimitService\.domains\[0\]\.failureModes: the product role may not set failure modes/) });
    const admin = await applyPolicyFile(db, stringify(file), { actor });
    expect(admin.plan.changed).toEqual([expect.objectContaining({ entity: "envoyDomain", after: expect.objectContaining({ failureModes: { "descriptors[1]": "closed" } }) })]);
    expect(parse(await exportPolicyFile(db)).rateLimitService.domains[0].descriptors[1].rate_limit).toEqual({ unit: "Day", requests_per_unit: 100, failureMode: "closed" });
  });

  it("are published in the document (PostgreSQL and Redis), and removed from it when the section goes", async () => {
    await applyPolicyFile(db, demoWithMessaging(), { actor });
    const v1 = await publishPolicy({ db, redis }, { actor });
    const live = await readCurrentPolicy(redis);
    expect(live.status === "ok" && live.policy.version).toBe(v1.version);
    const service = live.status === "ok" ? live.policy.rateLimitService : undefined;
    expect(service?.domains.map((d) => d.domain)).toEqual(["messaging"]);
    expect(service?.domains[0]?.descriptors[1]?.rule).toMatchObject({ requestsPerUnit: 100, unit: "DAY", counting: "envoy", windowMs: 86_400_000 });
    // The cross-tenant dashboards read its decisions' totals (lib/envoy/accounting.ts) like a tier's.
    expect(await tierTenants(db)).toContain("*:envoy:messaging");

    await applyPolicyFile(db, DEMO, { actor });
    expect((await compileDraft(db)).rateLimitService).toBeUndefined();
  });
});

describe("rollback and discard reset Envoy domains with the rest of the draft", () => {
  it("rollback to a version makes its domains the draft's again", async () => {
    await applyPolicyFile(db, demoWithMessaging(), { actor });
    const v1 = await publishPolicy({ db, redis }, { actor });
    await applyPolicyFile(db, withPerDay(300), { actor });
    await publishPolicy({ db, redis }, { actor });

    const back = await rollbackPolicy({ db, redis }, { actor, toVersion: v1.version });
    expect(back.draftReset).toBe(1);
    expect(parse(await exportPolicyFile(db)).rateLimitService.domains[0].descriptors[1].rate_limit.requests_per_unit).toBe(100);
    const v1Row = await db.policyVersion.findUnique({ where: { version: v1.version } });
    expect((await compileDraft(db)).rateLimitService).toEqual((v1Row?.document as { rateLimitService?: unknown }).rateLimitService);
  });

  it("discard puts back the live domains, keeping the draft's spelling where it compiles the same", async () => {
    await applyPolicyFile(db, demoWithMessaging(), { actor });
    await publishPolicy({ db, redis }, { actor });
    await applyPolicyFile(db, withPerDay(7), { actor });
    const discarded = await discardDraft(db, { actor, role: "admin" });
    expect(discarded.changes).toBe(1);
    const rule = parse(await exportPolicyFile(db)).rateLimitService.domains[0].descriptors[1].rate_limit;
    expect(rule).toEqual({ unit: "day", requests_per_unit: 100 });
  });
});
