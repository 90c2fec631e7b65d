import type { Redis } from "ioredis";
import { beforeAll, describe, expect, it } from "vitest";
import { freshStoresPerFile, testRedisPrefix } from "@/test/helpers";
import type { Db } from "@/lib/db/client";
import { drainClosedMinutes } from "@/lib/jobs/rollup";
import { publishTestPolicy } from "@/lib/jobs/testing/fixtures";
import { UsageRecorder } from "@/lib/redis/usage";
import { deniedByLimitForRange, tenantUsage } from "./tenant-usage";

const stores = freshStoresPerFile();
let db: Db;
let redis: Redis;

beforeAll(async () => {
  ({ db, redis } = stores);
  await publishTestPolicy(db, 1, new Date(Date.UTC(2026, 0, 1)));
});

describe("a tenant's usage on its page", () => {
  it("shows its traffic, its 429s by the limit that denied them (counted once), and no other tenant's", async () => {
    const minute = Date.UTC(2026, 11, 3, 9, 0);
    const prefix = `${testRedisPrefix()}tu:`;
    const recorder = new UsageRecorder(redis, prefix);
    const base = { tier: "free", operation: "read", keyPrefix: "acme00000000", latencyMs: 1 } as const;
    for (let i = 0; i < 3; i++) recorder.record({ ...base, atMs: minute + i, tenant: "acme", outcome: "allowed" });
    for (let i = 0; i < 5; i++) recorder.record({ ...base, atMs: minute + 10 + i, tenant: "acme", outcome: "denied", deniedLimit: "free-api_key" });
    for (let i = 0; i < 2; i++) recorder.record({ ...base, atMs: minute + 20 + i, tenant: "acme", outcome: "denied", deniedLimit: "free-ip" });
    recorder.record({ ...base, atMs: minute + 30, tenant: "globex", tier: "pro", outcome: "denied", deniedLimit: "pro-api_key" });
    await recorder.flush();
    await drainClosedMinutes({ db, redis, prefix }, { nowMs: minute + 2 * 60_000 });

    const usage = await tenantUsage(db, "acme", minute + 5 * 60_000);
    expect(usage.windows[0]).toMatchObject({ label: "last hour", decisions: 10, passed: 3, denied: 7 });
    expect(usage.windows[0].denyShare).toBeCloseTo(0.7);
    expect(usage.deniedByLimit).toEqual([
      { tenant: "acme", operation: "read", limit: "free-api_key", denied: 5 },
      { tenant: "acme", operation: "read", limit: "free-ip", denied: 2 },
    ]);
    expect((await tenantUsage(db, "globex", minute + 5 * 60_000)).deniedByLimit).toEqual([{ tenant: "globex", operation: "read", limit: "pro-api_key", denied: 1 }]);
    // The dashboards' panel: every tenant's, most first.
    const all = await deniedByLimitForRange(db, { fromMs: minute, toMs: minute + 60_000 });
    expect(all.map((d) => `${d.tenant} ${d.limit} ${d.denied}`)).toEqual(["acme free-api_key 5", "acme free-ip 2", "globex pro-api_key 1"]);
  });
});
