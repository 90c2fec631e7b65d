import type { Redis } from "ioredis";
import { beforeAll, describe, expect, it } from "vitest";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { keys } from "@/lib/redis/keys";
import { createApiToken } from "@/lib/services/access/create-api-token";
import { DEMO } from "@/lib/services/policy/testing/policy-rows";
import { POST as apply } from "./apply/route";
import { GET as exportPolicy } from "./export/route";
import { POST as publish } from "./publish/route";
import { POST as rollback } from "./rollback/route";
import { policyRequest as req, routeStoresPerFile } from "../testing/routes";

/** The demo without its operations' own failure modes (which only admin and sre may set). */
const PRODUCT_DEMO = DEMO.replace(/\n\s+failureMode: (local|closed)/g, "");

const stores = routeStoresPerFile("api");
let db: PrismaClient;
let redis: Redis;
const tokens: Record<string, string> = {};

beforeAll(async () => {
  ({ db, redis } = stores);
  for (const role of ["admin", "product", "sre", "billing"]) {
    tokens[role] = (await createApiToken({ db }, { kind: "admin", role, name: role }, "test")).token;
  }
  tokens.service = (await createApiToken({ db }, { kind: "service", name: "svc" }, "test")).token;
});

describe("admin policy API", () => {
  it("answers 401 without a token, with a wrong token, and with a service token", async () => {
    for (const token of [null, "sl_adm_wrong_wrong_wrong", tokens.service]) {
      const res = await apply(req("/apply", { token, body: DEMO, headers: { "content-type": "application/yaml" } }));
      expect(res.status).toBe(401);
      const body = await res.json();
      expect(body.error.code).toBe("unauthorized");
    }
    expect((await exportPolicy(req("/export", { method: "GET" }))).status).toBe(401);
    expect((await publish(req("/publish"))).status).toBe(401);
    expect((await rollback(req("/rollback", { body: '{"version":1}' }))).status).toBe(401);
    expect(await db.tier.count()).toBe(0);
  });

  it("answers 400 with the failing path for a bad policy file, and writes nothing", async () => {
    const bad = DEMO.replace("leaseTtl: 30s }", "leaseTtl: soon }");
    const res = await apply(req("/apply", { token: tokens.admin, body: bad, headers: { "content-type": "application/yaml" } }));
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error).toMatchObject({
      code: "invalid_policy",
      field: "tiers[0].limits[3].leaseTtl",
      message: 'tiers[0].limits[3].leaseTtl: expected a duration like 30s, got "soon"',
    });
    expect(body.error.issues[0]).toEqual({ path: "tiers[0].limits[3].leaseTtl", message: 'expected a duration like 30s, got "soon"' });
    expect(await db.tier.count()).toBe(0);

    const json = await apply(req("/apply", { token: tokens.admin, body: "{not json", headers: { "content-type": "application/json" } }));
    expect(json.status).toBe(400);
    expect((await json.json()).error.code).toBe("invalid_request");
  });

  it("answers 400 naming the path of a bad Envoy rule (rateLimitService), and writes nothing", async () => {
    const envoy = `${DEMO}\nrateLimitService:\n  domains:\n    - domain: d\n      descriptors:\n        - key: k\n          rate_limit: { unlimited: true, unit: day }\n`;
    const res = await apply(req("/apply", { token: tokens.admin, body: envoy, headers: { "content-type": "application/yaml" } }));
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: "invalid_policy", field: "rateLimitService.domains[0].descriptors[0].rate_limit.unit" });
    expect(await db.tier.count()).toBe(0);
    expect(await db.envoyDomain.count()).toBe(0);
  });

  it("forbids sre and billing tokens from changing policy (403), while they may dry-run and export", async () => {
    for (const role of ["sre", "billing"]) {
      const res = await apply(req("/apply", { token: tokens[role], body: DEMO, headers: { "content-type": "application/yaml" } }));
      expect(res.status).toBe(403);
      expect((await publish(req("/publish", { token: tokens[role] }))).status).toBe(403);
      expect((await rollback(req("/rollback", { token: tokens[role], body: '{"version":1}' }))).status).toBe(403);
      expect((await apply(req("/apply?dryRun=1", { token: tokens[role], body: DEMO }))).status).toBe(200);
    }
    expect(await db.tier.count()).toBe(0);
  });

  it("dry run answers the plan and writes nothing; apply writes it; a second apply plans nothing", async () => {
    const dry = await apply(req("/apply?dryRun=1", { token: tokens.product, body: DEMO, headers: { "content-type": "application/yaml" } }));
    expect(dry.status).toBe(200);
    const plan = (await dry.json()).plan;
    expect(plan.created.length).toBeGreaterThan(40);
    expect(await db.tier.count()).toBe(0);

    // Failure modes are the SRE's: a product token may apply the file, but not set them with it.
    const refused = await apply(req("/apply", { token: tokens.product, body: DEMO, headers: { "content-type": "application/yaml" } }));
    expect(refused.status).toBe(403);
    expect((await refused.json()).error).toMatchObject({ code: "forbidden", field: "operations[2].failureMode" });
    expect(await db.tier.count()).toBe(0);

    const res = await apply(req("/apply", { token: tokens.product, body: PRODUCT_DEMO, headers: { "content-type": "application/yaml" } }));
    expect(res.status).toBe(200);
    expect((await res.json()).applied).toBe(true);
    expect(await db.tier.count()).toBe(3);
    const entry = await db.auditEntry.findFirstOrThrow({ where: { action: "tier.create" } });
    expect(entry.actor).toMatch(/^token:sl_adm_/);

    const again = await apply(req("/apply", { token: tokens.product, body: PRODUCT_DEMO, headers: { "content-type": "application/yaml" } }));
    expect((await again.json()).plan).toEqual({ created: [], changed: [], deleted: [], warnings: [] });
  });

  it("accepts JSON bodies, exports without secrets, publishes and rolls back", async () => {
    const exported = await exportPolicy(req("/export?format=json", { method: "GET", token: tokens.admin }));
    expect(exported.status).toBe(200);
    const file = await exported.json();
    expect(JSON.stringify(file)).not.toContain("sk_test_");
    const roundTrip = await apply(req("/apply?dryRun=1", { token: tokens.admin, body: JSON.stringify(file), headers: { "content-type": "application/json" } }));
    expect((await roundTrip.json()).plan.created).toEqual([]);

    const p1 = await publish(req("/publish", { token: tokens.admin }));
    expect(p1.status).toBe(200);
    expect(await p1.json()).toMatchObject({ status: "published", version: 1 });
    file.tiers[0].weight = 2;
    await apply(req("/apply", { token: tokens.admin, body: JSON.stringify(file), headers: { "content-type": "application/json" } }));
    expect(await (await publish(req("/publish", { token: tokens.admin, body: '{"note":"weight"}' }))).json()).toMatchObject({ version: 2 });
    expect(await (await publish(req("/publish", { token: tokens.admin }))).json()).toMatchObject({ status: "unchanged", version: 2 });

    const bad = await rollback(req("/rollback", { token: tokens.admin, body: '{"version":"one"}' }));
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.field).toBe("version");
    const missing = await rollback(req("/rollback", { token: tokens.admin, body: '{"version":99}' }));
    expect(missing.status).toBe(404);

    const rb = await rollback(req("/rollback", { token: tokens.admin, body: '{"version":1}' }));
    expect(await rb.json()).toMatchObject({ status: "published", version: 3 });
    expect(await redis.get(keys.policyCurrent())).toBe("3");
    expect(JSON.parse((await redis.get(keys.policyVersion(3)))!).tiers.free.weight).toBe(1);
  });

  it("refuses a body over 1 MiB with 413", async () => {
    const res = await apply(req("/apply", { token: tokens.admin, body: "x".repeat(1024 * 1024 + 1), headers: { "content-type": "application/yaml" } }));
    expect(res.status).toBe(413);
  });

  it("refuses a cross-origin POST carrying a session cookie", async () => {
    const res = await publish(
      req("/publish", { headers: { cookie: "next-auth.session-token=abc", origin: "https://evil.example" } }),
    );
    expect(res.status).toBe(403);
  });
});
