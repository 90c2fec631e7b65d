import { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { freshStoresPerFile, testRedisUrl } from "@/test/helpers";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { compilePolicy, finalizePolicy } from "@/lib/policy/compile";
import { keys, PUBLISHED_MARKER } from "@/lib/redis/keys";
import { readCurrentPolicy } from "@/lib/redis/policy";
import { rowsToSpec, loadPolicyRows } from "@/lib/db/policy-repo";
import { applyPolicyFile } from "./apply-policy-file";
import { createApiKey } from "../access/create-api-key";
import { createApiToken } from "../access/create-api-token";
import { actionFailure } from "@/lib/errors";
import { errorResponse } from "@/lib/http/errors";
import { ServiceError } from "../errors";
import { publishPolicy } from "./publish-policy";
import { revokeApiKey } from "../access/revoke-api-key";
import { rollbackPolicy } from "./rollback-policy";
import { hashSecret } from "../access/secrets";
import { clearPolicy, DEMO } from "./testing/policy-rows";

const actor = "test:publish";
const editor = { actor, role: "admin" } as const;

const stores = freshStoresPerFile("pub");
let db: PrismaClient;
let redis: Redis;
let sub: Redis;

beforeAll(() => {
  ({ db, redis } = stores);
  sub = new Redis(testRedisUrl());
});
afterAll(() => sub?.disconnect());
beforeEach(async () => {
  await clearPolicy(db);
  await db.apiToken.deleteMany();
  const stale = await redis.keys(`${process.env.SLUICE_REDIS_PREFIX}*`);
  if (stale.length) await redis.del(...stale);
  await applyPolicyFile(db, DEMO, { actor });
});

/** The versions PUBLISHed on the policy channel from now on: what every decision server follows. */
async function watchPublishes(): Promise<{ seen: number[]; unsubscribe(): Promise<void> }> {
  const seen: number[] = [];
  const listener = (channel: string, message: string) => channel === keys.policyChannel() && seen.push(Number(message));
  sub.on("message", listener);
  await sub.subscribe(keys.policyChannel());
  return {
    seen,
    async unsubscribe() {
      sub.off("message", listener);
      await sub.unsubscribe(keys.policyChannel());
    },
  };
}

describe("publishPolicy", () => {
  it("puts exactly the compiled document and the key index in Redis, and a subscriber sees the PUBLISH", async () => {
    const { seen, unsubscribe } = await watchPublishes();
    const service = await createApiToken({ db, redis }, { kind: "service", name: "gw" }, actor);

    const result = await publishPolicy({ db, redis }, { actor, nowMs: Date.parse("2026-12-02T12:00:00Z") });
    expect(result).toMatchObject({ status: "published", version: 1, previousVersion: null });

    const expected = finalizePolicy(compilePolicy(rowsToSpec(await loadPolicyRows(db))), 1, "2026-12-02T12:00:00.000Z");
    expect(JSON.parse((await redis.get(keys.policyVersion(1)))!)).toEqual(expected);
    expect(await redis.get(keys.policyCurrent())).toBe("1");
    const live = await readCurrentPolicy(redis);
    expect(live).toEqual({ status: "ok", policy: expected });

    const index = await redis.hgetall(keys.keyIndex());
    // 15 keys, and the marker that says this index is the published one (lib/redis/keys.ts).
    expect(Object.keys(index)).toHaveLength(16);
    expect(index[PUBLISHED_MARKER]).toBe("1");
    expect(index[hashSecret("sk_test_acme_ci_0001")]).toBe("acme");
    // A suspended tenant's key stays indexed: it must answer 403, not 401.
    expect(index[hashSecret("sk_test_initech_ci_0001")]).toBe("initech");
    expect((await redis.smembers(keys.serviceTokens())).sort()).toEqual([hashSecret(service.token), PUBLISHED_MARKER].sort());

    const row = await db.policyVersion.findUniqueOrThrow({ where: { version: 1 } });
    expect(row.checksum).toBe(expected.checksum);
    expect(row.document).toEqual(expected);
    expect(await db.auditEntry.count({ where: { action: "policy.publish", entityId: "1", actor } })).toBe(1);

    await expect.poll(() => seen).toEqual([1]);
    await unsubscribe();
  });

  it("says so when nothing changed, and writes no new version", async () => {
    await publishPolicy({ db, redis }, { actor });
    const again = await publishPolicy({ db, redis }, { actor });
    expect(again).toMatchObject({ status: "unchanged", version: 1 });
    expect(await db.policyVersion.count()).toBe(1);
    expect(await redis.get(keys.policyCurrent())).toBe("1");
  });

  it("refuses an invalid policy with its path and leaves the live one in place", async () => {
    await publishPolicy({ db, redis }, { actor });
    const before = await redis.get(keys.policyVersion(1));
    const free = await db.tier.findUniqueOrThrow({ where: { name: "free" } });
    await db.limit.create({
      data: { id: "lim_ghost", tierId: free.id, operation: "ghost", scope: "tenant", algorithm: "fixed_window", limit: 1, windowMs: 1000, position: 99 },
    });
    const error = await publishPolicy({ db, redis }, { actor }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).code).toBe("invalid_policy");
    expect((error as ServiceError).message).toBe('tiers[0].limits[7].operation: unknown operation "ghost"');
    expect(await redis.get(keys.policyCurrent())).toBe("1");
    expect(await redis.get(keys.policyVersion(1))).toBe(before);
    expect(await redis.exists(keys.policyVersion(2))).toBe(0);
    expect(await db.policyVersion.count()).toBe(1);
  });

  it("a bad document in Redis is reported, never returned as the policy", async () => {
    await publishPolicy({ db, redis }, { actor });
    const doc = JSON.parse((await redis.get(keys.policyVersion(1)))!);
    doc.tiers.free.limits[0].limit = 0;
    await redis.set(keys.policyVersion(1), JSON.stringify(doc));
    const read = await readCurrentPolicy(redis);
    expect(read.status).toBe("invalid");
  });

  it("when Redis is down, publish fails with store_unavailable and no version is recorded; the client library's text stays out of the answer", async () => {
    const dead = new Redis("redis://127.0.0.1:1", { enableOfflineQueue: false, maxRetriesPerRequest: 0, lazyConnect: true, retryStrategy: () => null });
    dead.on("error", () => undefined);
    try {
      const error = await publishPolicy({ db, redis: dead }, { actor }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ServiceError);
      expect((error as ServiceError).code).toBe("store_unavailable");
      // What a client is shown (the API envelope, a server action's result): ours, not ioredis's
      // ("Stream isn't writeable and enableOfflineQueue options is false"); the cause is kept for logs.
      const shown = [(error as ServiceError).message, JSON.stringify(await errorResponse(error).json()), JSON.stringify(actionFailure(error))];
      for (const text of shown) {
        expect(text).toContain("Redis is unavailable (publishing v1); nothing was changed");
        expect(text).not.toMatch(/stream|writeable|enableOfflineQueue|ECONNREFUSED|127\.0\.0\.1/i);
      }
      expect(((error as ServiceError).cause as Error).message).toMatch(/enableOfflineQueue/);
    } finally {
      dead.disconnect();
    }
    expect(await db.policyVersion.count()).toBe(0);
    expect(await db.auditEntry.count({ where: { action: "policy.publish" } })).toBe(0);
    // And the next publish with Redis back takes version 1.
    expect((await publishPolicy({ db, redis }, { actor })).version).toBe(1);
  });

  it("rollback republishes an earlier document as a new version", async () => {
    await publishPolicy({ db, redis }, { actor });
    const v1 = JSON.parse((await redis.get(keys.policyVersion(1)))!);
    await applyPolicyFile(db, DEMO.replace("limit: 100, window: 1m }", "limit: 120, window: 1m }"), { actor });
    const v2 = await publishPolicy({ db, redis }, { actor });
    expect(v2.version).toBe(2);
    const { seen, unsubscribe } = await watchPublishes();

    const back = await rollbackPolicy({ db, redis }, { actor, toVersion: 1 });
    expect(back).toMatchObject({ status: "published", version: 3, previousVersion: 2, checksum: v1.checksum });
    const v3 = JSON.parse((await redis.get(keys.policyVersion(3)))!);
    const strip = ({ version: _v, createdAt: _c, ...rest }: Record<string, unknown>) => rest;
    expect(strip(v3)).toEqual(strip(v1));
    expect(v3.version).toBe(3);
    expect(await redis.get(keys.policyCurrent())).toBe("3");
    expect((await db.policyVersion.findUniqueOrThrow({ where: { version: 3 } })).rolledBackFrom).toBe(1);
    expect(await db.auditEntry.count({ where: { action: "policy.rollback" } })).toBe(1);
    await expect.poll(() => seen).toEqual([3]);
    await unsubscribe();

    const missing = await rollbackPolicy({ db, redis }, { actor, toVersion: 42 }).catch((e: unknown) => e);
    expect((missing as ServiceError).code).toBe("not_found");
  });

  it("a created key works at once and a revoked key leaves the index at once, announced on the keys channel", async () => {
    await publishPolicy({ db, redis }, { actor });
    const created = await createApiKey({ db, redis }, { tenant: "acme", name: "mobile" }, editor);
    expect(await redis.hget(keys.keyIndex(), hashSecret(created.key))).toBe("acme");
    const row = await db.apiKey.findFirstOrThrow({ where: { name: "mobile" } });
    expect(row.hash).toBe(hashSecret(created.key));
    expect(row.prefix).toBe(created.key.slice(0, 12));

    const messages: string[] = [];
    sub.on("message", (ch, msg) => ch === keys.keyChannel() && messages.push(msg));
    await sub.subscribe(keys.keyChannel());
    const revoked = await revokeApiKey({ db, redis }, { tenant: "acme", prefix: created.prefix }, editor);
    expect(revoked.alreadyRevoked).toBe(false);
    expect(await redis.hget(keys.keyIndex(), hashSecret(created.key))).toBeNull();
    await expect.poll(() => messages).toEqual([hashSecret(created.key)]);
    await sub.unsubscribe(keys.keyChannel());
    expect(await db.auditEntry.count({ where: { action: { in: ["key.create", "key.revoke"] }, entityId: row.id } })).toBe(2);

    // Another tenant's key is not found through this tenant.
    const other = await revokeApiKey({ db, redis }, { tenant: "globex", name: "mobile" }, editor).catch((e: unknown) => e);
    expect((other as ServiceError).code).toBe("not_found");
  });
});
