/**
 * The replay's promise: on a fixed dataset (counts per subject per bucket), it predicts the 429s a
 * real decision server then makes when the same traffic is sent to it, spread over each bucket the
 * way the replay models it. Tolerance, stated in docs/proving.md: per tenant, the predicted 429 count
 * is within 5% of its requests (at least 3 requests) of what the server answered.
 *
 * The dataset's buckets are 2 s (production records minutes) and the policy's windows seconds, so
 * the run takes ~30 s; the engine code is the same at any scale.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl } from "@/test/helpers";
import { compileFixture, writeFixturePolicy } from "@/lib/decision/testing/fixture";
import { spawnDecisionServer, type SpawnedServer } from "@/lib/processes/harness";
import type { PolicyFileInput } from "@/lib/policy/policy-file";
import { sha256Hex } from "@/lib/redis/key-index";
import { replayUsage, type UsageCell } from "./replay";

const TOKEN = "svc_test_token_replay";
const BUCKET_MS = 2_000;
const BUCKETS = 12;

const tenants = ["steady", "bursty", "heavy"] as const;
const keyOf = (tenant: string, i: number) => `sk_test_replay_${tenant}_${i}`;
const policy: PolicyFileInput = {
  version: 1,
  operations: [
    { name: "read", match: ["GET /v1/things"] },
    { name: "write", match: ["POST /v1/things"], cost: 2 },
  ],
  tiers: [
    {
      name: "metered",
      limits: [
        { operation: "*", scope: "api_key", algorithm: "sliding_window_counter", limit: 12, window: "4s" },
        { operation: "write", scope: "tenant", algorithm: "fixed_window", limit: 16, window: "6s" },
        { operation: "*", scope: "tenant", algorithm: "token_bucket", limit: 10, window: "1s", burst: 20 },
      ],
    },
  ],
  tenants: tenants.map((slug) => ({ slug, name: slug, tier: "metered", keys: [0, 1].map((i) => ({ name: `k${i}`, key: keyOf(slug, i) })) })),
};

/** The fixed dataset: per bucket, per tenant, key and operation, a request count. */
function dataset(startMs: number): UsageCell[] {
  const cells: UsageCell[] = [];
  const add = (b: number, tenant: string, key: number, operation: string, count: number) =>
    cells.push({ bucketStartMs: startMs + b * BUCKET_MS, tenant, keyPrefix: sha256Hex(keyOf(tenant, key)).slice(0, 12), operation, count });
  for (let b = 0; b < BUCKETS; b++) {
    add(b, "steady", 0, "read", 5);
    add(b, "steady", 1, "read", 4);
    add(b, "bursty", 0, "read", b % 4 === 1 ? 18 : 2);
    add(b, "bursty", 1, "write", b % 3 === 0 ? 6 : 1);
    add(b, "heavy", 0, "read", 14);
    add(b, "heavy", 1, "write", 5);
  }
  return cells;
}

let redis: Redis;
let server: SpawnedServer;

beforeAll(async () => {
  const prefix = `${testRedisPrefix()}rp${randomBytes(3).toString("hex")}:`;
  redis = new Redis(testRedisUrl());
  server = await spawnDecisionServer({ REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: TOKEN, POLICY_POLL_MS: "200" });
  process.env.SLUICE_REDIS_PREFIX = prefix;
  await writeFixturePolicy(redis, compileFixture(policy));
  for (let i = 0; i < 100 && (await fetch(`${server.url}/readyz`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 50));
});

afterAll(async () => {
  await server?.stop();
  redis?.disconnect();
});

describe("replay of recorded traffic", () => {
  it("predicts, per tenant, the 429s a real decision server makes on the same traffic (within 5% of requests)", async () => {
    // Buckets start on real instants in the near future, so the windows' phases are the same for both.
    const startMs = Math.ceil((Date.now() + 1_500) / BUCKET_MS) * BUCKET_MS;
    const cells = dataset(startMs);
    const { doc } = compileFixture(policy);
    const predicted = await replayUsage(doc, cells, { bucketMs: BUCKET_MS });

    // The same traffic to the server: each cell's requests at (i + ½) · bucket / n into its bucket.
    const keyByPrefix = new Map(tenants.flatMap((t) => [0, 1].map((i) => [sha256Hex(keyOf(t, i)).slice(0, 12), keyOf(t, i)] as const)));
    const sends: { atMs: number; tenant: string; key: string; operation: string }[] = [];
    for (const c of cells) {
      for (let i = 0; i < c.count; i++) sends.push({ atMs: c.bucketStartMs + Math.floor(((i + 0.5) * BUCKET_MS) / c.count), tenant: c.tenant, key: keyByPrefix.get(c.keyPrefix)!, operation: c.operation });
    }
    sends.sort((a, b) => a.atMs - b.atMs);
    const actual = new Map<string, number>(tenants.map((t) => [t, 0]));
    const requests = new Map<string, number>(tenants.map((t) => [t, 0]));
    await Promise.all(
      sends.map(async (s) => {
        await new Promise((r) => setTimeout(r, Math.max(0, s.atMs - Date.now())));
        const res = await fetch(`${server.url}/v1/check`, {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ key: s.key, operation: s.operation === "write" ? "POST /v1/things" : "GET /v1/things" }),
        });
        const answer = (await res.json()) as { status: number };
        requests.set(s.tenant, requests.get(s.tenant)! + 1);
        if (answer.status === 429) actual.set(s.tenant, actual.get(s.tenant)! + 1);
      }),
    );

    for (const t of tenants) {
      const p = predicted.tenants[t]!;
      expect(p.requests, t).toBe(requests.get(t));
      const tolerance = Math.max(3, 0.05 * p.requests);
      expect(Math.abs(p.limited - actual.get(t)!), `${t}: predicted ${p.limited} 429s, the server answered ${actual.get(t)}`).toBeLessThanOrEqual(tolerance);
    }
    // the dataset does exercise the limits: two tenants limited, the steady one not
    expect(predicted.tenants.steady!.limited).toBe(0);
    expect(predicted.tenants.bursty!.limited).toBeGreaterThan(5);
    expect(predicted.tenants.heavy!.limited).toBeGreaterThan(20);
  }, 90_000);
});
