import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabasePerFile, testRedisPrefix, testRedisUrl } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { keys } from "@/lib/redis/keys";
import { hashSecret } from "@/lib/services/access/secrets";
import { verifyPortalLink } from "@/lib/services/billing/portal-link";
import { ServiceTokens } from "../decision/service-tokens";
import { runSluice } from "../testing/sluice-cli";

const DEMO = path.resolve(import.meta.dirname, "../../examples/demo-policy.yaml");
const PREFIX = `${testRedisPrefix()}bcli:`;
const SECRET = "billing-cli-test-secret-0123456789";

const fresh = freshDatabasePerFile();
let db: PrismaClient;
let redis: Redis;

const sluice = (...args: string[]) =>
  runSluice({ DATABASE_URL: fresh.url, REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: PREFIX, NEXTAUTH_SECRET: SECRET }, args);

beforeAll(async () => {
  ({ db } = fresh);
  redis = new Redis(testRedisUrl());
  expect((await sluice("apply", "-f", DEMO)).code).toBe(0);
}, 150_000);
afterAll(() => redis?.disconnect());

describe("sluice tenants, tokens --kind tenant, portal-link", () => {
  it("tenants billing sets the anchor and zone in the draft (audited); a bad zone exits 1 naming the tenant and the field", async () => {
    const ok = await sluice("tenants", "billing", "--tenant", "acme", "--anchor", "2026-03-15", "--time-zone", "America/Los_Angeles");
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("Tenant acme: billing anchor 2026-03-15 America/Los_Angeles in the draft");
    expect(await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).toMatchObject({ billingAnchor: "2026-03-15", billingTimeZone: "America/Los_Angeles" });
    expect(await db.auditEntry.findFirst({ where: { action: "tenant.update", actor: { startsWith: "cli:" } } })).not.toBeNull();
    const bad = await sluice("tenants", "billing", "--tenant", "acme", "--anchor", "2026-03-15", "--time-zone", "America/Atlantis");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('tenants[0].billing.timeZone: tenant acme: unknown time zone "America/Atlantis"');
    expect(bad.stderr).not.toMatch(/\n\s+at /);
    const list = await sluice("tenants", "list");
    expect(list.stdout).toContain("acme  tier free  active  billing anchor 2026-03-15 America/Los_Angeles");
  }, 300_000);

  it("a tenant token is printed once, kept as sha256, published to its own hash and never accepted as a service token; revoked by prefix", async () => {
    const created = await sluice("tokens", "create", "--kind", "tenant", "--tenant", "acme");
    expect(created.code).toBe(0);
    const token = created.stdout.trim().split("\n")[1]!;
    expect(token).toMatch(/^sl_ten_[A-Za-z0-9]{32}$/);
    const row = await db.apiToken.findFirstOrThrow({ where: { kind: "tenant" } });
    expect(row).toMatchObject({ tenant: "acme", hash: hashSecret(token), prefix: token.slice(0, 12) });
    expect(JSON.stringify(await db.apiToken.findMany())).not.toContain(token);
    expect(await redis.hget(keys.tenantTokens(PREFIX), hashSecret(token))).toBe("acme");

    expect((await sluice("publish")).code).toBe(0);
    // The decision server loads the published service-token set: a tenant token is not in it.
    const serviceSet = new Set(await redis.smembers(keys.serviceTokens(PREFIX)));
    expect(serviceSet.has(hashSecret(token))).toBe(false);
    const accepted = new ServiceTokens([]);
    accepted.replacePublished(serviceSet);
    expect(accepted.accepts(token)).toBe(false);
    expect(await redis.hget(keys.tenantTokens(PREFIX), hashSecret(token))).toBe("acme");

    expect((await sluice("tokens", "create", "--kind", "tenant", "--tenant", "nobody")).stderr).toContain('tenant: no tenant "nobody"');
    expect((await sluice("tokens", "list", "--kind", "tenant")).stdout).toContain(`${row.prefix}…  tenant`);
    const revoked = await sluice("tokens", "revoke", "--prefix", row.prefix);
    expect(revoked.stdout).toContain(`Revoked token ${row.prefix}.`);
    expect(await redis.hget(keys.tenantTokens(PREFIX), hashSecret(token))).toBeNull();
    expect(await db.auditEntry.count({ where: { action: { in: ["token.create", "token.revoke"] }, entityId: row.id } })).toBe(2);
  }, 400_000);

  it("portal-link prints a signed URL the control plane accepts until it expires", async () => {
    const r = await sluice("portal-link", "--tenant", "acme", "--ttl", "1h", "--base-url", "https://sluice.example.com");
    expect(r.code).toBe(0);
    const url = new URL(r.stdout.trim());
    expect(url.origin + url.pathname).toBe("https://sluice.example.com/portal/acme");
    const query = { tenant: "acme", exp: url.searchParams.get("exp"), sig: url.searchParams.get("sig") };
    process.env.NEXTAUTH_SECRET = SECRET;
    const now = Date.now();
    expect(verifyPortalLink(query, now)).toMatchObject({ ok: true, tenant: "acme" });
    expect(verifyPortalLink(query, now + 3_600_000 + 1000)).toEqual({ ok: false, reason: "expired" });
    expect(verifyPortalLink({ ...query, tenant: "globex" }, now)).toEqual({ ok: false, reason: "forged" });
    expect((await sluice("portal-link", "--tenant", "acme", "--ttl", "90d")).stderr).toContain("ttl: expected a duration from 1m to 30d");
  }, 300_000);
});
