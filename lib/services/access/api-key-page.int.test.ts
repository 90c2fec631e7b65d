import { Redis } from "ioredis";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { testRedisPrefix, freshStoresPerFile } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { expireApiKeys, KEY_EXPIRY_ACTOR } from "@/lib/jobs/expire-api-keys";
import { drainClosedMinutes } from "@/lib/jobs/rollup";
import type { DenialReason } from "@/lib/policy/denial-reasons";
import { keys } from "@/lib/redis/keys";
import { UsageRecorder } from "@/lib/redis/usage";
import { apiKeyPage } from "./api-key-page";
import { createApiKey } from "./create-api-key";
import { serviceError } from "../testing/service-error";
import { revokeApiKey } from "./revoke-api-key";
import { rotateApiKey } from "./rotate-api-key";
import { hashSecret } from "./secrets";
import { draftDemo } from "../policy/testing/policy-rows";

const editor = { actor: "user:pm@example.com", role: "product" } as const;
const NOW = Date.UTC(2026, 11, 6, 12, 0, 0);

const stores = freshStoresPerFile("keypage");
let db: PrismaClient;
let redis: Redis;
beforeAll(() => ({ db, redis } = stores));
beforeEach(async () => {
  await db.usageRollup.deleteMany();
  await draftDemo(db, "test");
  await db.auditEntry.deleteMany();
});

async function indexed(key: string): Promise<string | null> {
  return redis.hget(keys.keyIndex(), hashSecret(key));
}

describe("rotating an API key", () => {
  it("issues a new key at once, keeps the old one working for the overlap, then the worker revokes it; every step audited", async () => {
    const old = await createApiKey({ db, redis }, { tenant: "acme", name: "rot-mobile" }, editor);
    const rotated = await rotateApiKey({ db, redis }, { tenant: "acme", keyId: old.id, overlapMinutes: 60 }, editor, NOW);
    expect(rotated.oldExpiresAt).toBe(new Date(NOW + 3_600_000).toISOString());
    expect(rotated.created.name).toMatch(/^rot-mobile-r[0-9a-f]{6}$/);
    // Both work during the overlap.
    expect(await indexed(old.key)).toBe("acme");
    expect(await indexed(rotated.created.key)).toBe("acme");
    const oldPage = await apiKeyPage(db, { tenant: "acme", keyId: old.id, range: "24h", nowMs: NOW });
    expect(oldPage).toMatchObject({ status: "expiring", expiresAt: new Date(NOW + 3_600_000), rotatedTo: [{ id: rotated.created.id, name: rotated.created.name, revoked: false }] });
    const newPage = await apiKeyPage(db, { tenant: "acme", keyId: rotated.created.id, range: "24h", nowMs: NOW });
    expect(newPage).toMatchObject({ status: "active", expiresAt: null, rotatedFrom: { id: old.id, name: "rot-mobile" } });
    const audit = await db.auditEntry.findMany({ orderBy: { at: "asc" } });
    expect(audit.map((a) => a.action)).toEqual(["key.create", "key.create", "key.rotate"]);
    expect(audit[2]).toMatchObject({ actor: editor.actor, entityId: old.id, after: { expiresAt: new Date(NOW + 3_600_000).toISOString(), overlapMinutes: 60, replacedBy: { id: rotated.created.id } } });

    // One minute before the end of the overlap nothing happens; after it, the old key is revoked.
    expect(await expireApiKeys({ db, redis }, { nowMs: NOW + 59 * 60_000 })).toEqual([]);
    expect(await indexed(old.key)).toBe("acme");
    expect(await expireApiKeys({ db, redis }, { nowMs: NOW + 61 * 60_000 })).toEqual([{ tenant: "acme", name: "rot-mobile" }]);
    expect(await indexed(old.key)).toBeNull();
    expect(await indexed(rotated.created.key)).toBe("acme");
    const revoke = await db.auditEntry.findFirst({ where: { action: "key.revoke" } });
    expect(revoke).toMatchObject({ actor: KEY_EXPIRY_ACTOR, entityId: old.id });
    expect((await apiKeyPage(db, { tenant: "acme", keyId: old.id, range: "24h", nowMs: NOW + 61 * 60_000 }))?.status).toBe("revoked");
    // A second pass finds nothing left to do.
    expect(await expireApiKeys({ db, redis }, { nowMs: NOW + 62 * 60_000 })).toEqual([]);
  });

  it("an overlap of 0 revokes the old key at once", async () => {
    const old = await createApiKey({ db, redis }, { tenant: "acme", name: "rot-ci" }, editor);
    const rotated = await rotateApiKey({ db, redis }, { tenant: "acme", keyId: old.id, overlapMinutes: 0 }, editor, NOW);
    expect(await indexed(old.key)).toBeNull();
    expect(await indexed(rotated.created.key)).toBe("acme");
    expect((await db.auditEntry.findMany({ orderBy: { at: "asc" } })).map((a) => a.action)).toEqual(["key.create", "key.create", "key.rotate", "key.revoke"]);
  });

  it("refuses, naming the field, a bad overlap, another tenant's key, a revoked key and a key already rotated", async () => {
    const old = await createApiKey({ db, redis }, { tenant: "acme", name: "rot-web" }, editor);
    expect(await serviceError(rotateApiKey({ db, redis }, { tenant: "acme", keyId: old.id, overlapMinutes: -5 }, editor))).toMatchObject({ code: "invalid_request", field: "overlapMinutes" });
    expect(await serviceError(rotateApiKey({ db, redis }, { tenant: "acme", keyId: old.id, overlapMinutes: 50_000 }, editor))).toMatchObject({ field: "overlapMinutes", message: expect.stringContaining("at most 30 days") });
    expect(await serviceError(rotateApiKey({ db, redis }, { tenant: "globex", keyId: old.id, overlapMinutes: 60 }, editor))).toMatchObject({ code: "not_found", field: "keyId" });
    await rotateApiKey({ db, redis }, { tenant: "acme", keyId: old.id, overlapMinutes: 60 }, editor, NOW);
    expect(await serviceError(rotateApiKey({ db, redis }, { tenant: "acme", keyId: old.id, overlapMinutes: 60 }, editor, NOW))).toMatchObject({ code: "conflict", message: expect.stringContaining("already rotated") });
    const other = await createApiKey({ db, redis }, { tenant: "acme", name: "rot-gone" }, editor);
    await revokeApiKey({ db, redis }, { tenant: "acme", name: "rot-gone" }, editor);
    expect(await serviceError(rotateApiKey({ db, redis }, { tenant: "acme", keyId: other.id, overlapMinutes: 60 }, editor))).toMatchObject({ code: "conflict", field: "keyId" });
    // Nothing of the refused attempts was written: one rotation, its key, and the keys made here.
    expect(await db.apiKey.count({ where: { tenant: { slug: "acme" }, name: { startsWith: "rot-web-r" } } })).toBe(1);
  });
});

describe("a key's page", () => {
  it("shows the key's decisions and denials by reason over the range, and its last minute of use; another tenant's key is not found", async () => {
    const key = await createApiKey({ db, redis }, { tenant: "acme", name: "batch" }, editor);
    const keyPrefix = hashSecret(key.key).slice(0, 12);
    const prefix = `${testRedisPrefix()}keypage-usage:`;
    const recorder = new UsageRecorder(redis, prefix);
    const record = (atMs: number, n: number, reason: DenialReason | null, other = false) => {
      for (let i = 0; i < n; i++) {
        recorder.record({ atMs: atMs + i, tenant: "acme", tier: "free", operation: "orders-read", outcome: reason ? "denied" : "allowed", keyPrefix: other ? "ffffffffffff" : keyPrefix, latencyMs: 1, deniedReason: reason });
      }
    };
    const lastMinute = NOW - 3 * 60_000;
    record(lastMinute, 70, null);
    record(lastMinute, 25, "rate_limited");
    record(lastMinute, 4, "quota_exhausted");
    record(NOW - 10 * 60_000, 5, null);
    // Two days ago: outside 24h, inside 7d.
    record(NOW - 2 * 86_400_000, 1000, null);
    // Another key of acme: not this key's.
    record(lastMinute, 999, null, true);
    await recorder.flush();
    await drainClosedMinutes({ db, redis, prefix }, { nowMs: NOW });

    const page = await apiKeyPage(db, { tenant: "acme", keyId: key.id, range: "24h", nowMs: NOW });
    expect(page?.usage).toMatchObject({ allowed: 75, denied: 29, deniedByReason: { rate_limited: 25, quota_exhausted: 4, unknown_key: 0, not_recorded: 0 } });
    expect(page?.lastUsed).toEqual({ atMs: lastMinute, granularity: "minute" });
    expect((await apiKeyPage(db, { tenant: "acme", keyId: key.id, range: "7d", nowMs: NOW }))?.usage.allowed).toBe(1075);
    expect(await apiKeyPage(db, { tenant: "globex", keyId: key.id, range: "24h", nowMs: NOW })).toBeNull();
    const unused = await createApiKey({ db, redis }, { tenant: "acme", name: "unused" }, editor);
    expect((await apiKeyPage(db, { tenant: "acme", keyId: unused.id, range: "24h", nowMs: NOW }))?.lastUsed).toBeNull();
  });
});
