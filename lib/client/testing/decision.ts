/**
 * Test support for the SDK: a real decision server (its own process, real Redis, this run's key
 * prefix) with a policy written for the client's tests, and one set of tenants per test file so
 * files running in parallel never share a counter.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { testRedisPrefix } from "../../../test/helpers";
import { startOwnRedis } from "../../processes/redis-server";
import { compileFixture, writeFixturePolicy } from "../../decision/testing/fixture";
import { spawnDecisionServer, type SpawnedServer } from "../../processes/harness";
import type { PolicyFileInput } from "../../policy/policy-file";

export const SERVICE_TOKEN = "svc_client_test_0001";

/** The API keys of one test file's tenants. */
export interface ClientKeys {
  /** Tier `free`: 5 requests per hour per key (an exact log). */
  free: string;
  free2: string;
  /** Tier `conc`: one request in flight per tenant. */
  conc: string;
  /** Tier `shaped`: `GET /v1/shaped` is shaped to 2 per second (mode delay, maxDelay 2 s). */
  shaped: string;
  suspended: string;
}

function keysFor(name: string): ClientKeys {
  return { free: `sk_test_${name}_free_0001`, free2: `sk_test_${name}_free_0002`, conc: `sk_test_${name}_conc_0001`, shaped: `sk_test_${name}_shaped_01`, suspended: `sk_test_${name}_susp_0001` };
}

export function clientPolicy(names: readonly string[], extra: Partial<PolicyFileInput> = {}): PolicyFileInput {
  return {
    version: 1,
    defaults: { failureMode: "open" },
    operations: [
      { name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] },
      { name: "hold", match: ["GET /v1/hold"] },
      { name: "shaped", match: ["GET /v1/shaped"] },
      { name: "export", match: ["POST /v1/exports"], failureMode: "closed" },
      ...(extra.operations ?? []),
    ],
    tiers: [
      // Exact and not aligned to a clock boundary: the sixth request is denied whenever the test runs.
      { name: "free", weight: 1, limits: [{ operation: "*", scope: "api_key", algorithm: "sliding_window_log", limit: 5, window: "1h" }] },
      { name: "conc", limits: [{ operation: "*", scope: "tenant", algorithm: "concurrency", limit: 1, leaseTtl: "30s" }] },
      {
        name: "shaped",
        limits: [{ operation: "shaped", scope: "tenant", algorithm: "leaky_bucket", limit: 2, window: "1s", burst: 1, mode: "delay", maxDelay: "2s" }],
      },
      ...(extra.tiers ?? []),
    ],
    globalCaps: extra.globalCaps ?? [],
    tenants: [
      ...names.flatMap((name) => {
        const k = keysFor(name);
        return [
          { slug: `${name}-free`, name: `${name} free`, tier: "free", keys: [{ name: "a", key: k.free }, { name: "b", key: k.free2 }] },
          { slug: `${name}-conc`, name: `${name} conc`, tier: "conc", keys: [{ name: "a", key: k.conc }] },
          { slug: `${name}-shaped`, name: `${name} shaped`, tier: "shaped", keys: [{ name: "a", key: k.shaped }] },
          { slug: `${name}-sus`, name: `${name} suspended`, tier: "free", status: "suspended" as const, keys: [{ name: "a", key: k.suspended }] },
        ];
      }),
      ...(extra.tenants ?? []),
    ],
  };
}

export interface ClientTestServer {
  url: string;
  token: string;
  server: SpawnedServer;
  redis: Redis;
  /** The API keys of the tenants named `name` in `start(names)`. */
  keys(name: string): ClientKeys;
  stop(): Promise<void>;
}

/** Starts a decision server with `clientPolicy(names, extra)` published, and waits until it is ready. */
export function startDecisionServer(names: readonly string[], extra: Partial<PolicyFileInput> = {}): Promise<ClientTestServer> {
  return startDecisionServerWith(clientPolicy(names, extra));
}

/**
 * Starts a decision server with `policy` published, and waits until it is ready. It gets a
 * redis-server of its own: these tests pin the client's contract to exact counts and leases, and
 * on the run's shared Redis another file's long script can hold every command past the decision
 * budget (25 ms, the default these tests keep), which the server rightly answers by failing open
 * (one full CI run: a first check answered `remaining: 0`, a lease taken but never handed out).
 */
export async function startDecisionServerWith(policy: PolicyFileInput): Promise<ClientTestServer> {
  const prefix = `${testRedisPrefix()}cl${randomBytes(3).toString("hex")}:`;
  const own = await startOwnRedis();
  const redis = new Redis(own.url);
  // The document is written before the server starts: it is ready on its first read.
  const previous = process.env.SLUICE_REDIS_PREFIX;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  try {
    await writeFixturePolicy(redis, compileFixture(policy));
  } finally {
    process.env.SLUICE_REDIS_PREFIX = previous;
  }
  const server = await spawnDecisionServer(
    { REDIS_URL: own.url, SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: SERVICE_TOKEN, POLICY_POLL_MS: "200" },
    { waitReady: true },
  );
  return {
    url: server.url,
    token: SERVICE_TOKEN,
    server,
    redis,
    keys: keysFor,
    async stop() {
      await server.stop();
      redis.disconnect();
      await own.stop();
    },
  };
}
