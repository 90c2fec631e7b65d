/**
 * Chaos: Redis restarting EMPTY under load (issue #17, defect 1; docs/failure-modes.md
 * "Recovery: Redis back empty").
 *
 * A real stack on its own services: a redis-server of this test (no persistence, as the machine's
 * default), a database of its own, the control plane's publish, two decision servers
 * (SLUICE_INSTANCES=2, the product's 25 ms budget and 5 s poll), and a real worker process. Under
 * constant load the redis-server is SIGKILLed and started again empty, twice: once with the
 * worker paused (to watch what the decision servers do while nothing restores), once with it
 * running (the recovery bound). Before the fix every /v1/check answered 401 (service token
 * unknown), /readyz said ready with nothing missing, and nothing recovered without a publish.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "../../test/helpers";
import type { PrismaClient } from "../generated/prisma/client";
import { type OwnRedis, startOwnRedis } from "../processes/redis-server";
import { keys } from "../redis/keys";
import { applyPolicyFile } from "../services/policy/apply-policy-file";
import { createApiKey } from "../services/access/create-api-key";
import { createApiToken } from "../services/access/create-api-token";
import { publishPolicy } from "../services/policy/publish-policy";
import { spawnDecisionServer, spawnWorker, type SpawnedServer, type SpawnedWorker } from "../processes/harness";

/**
 * The bounds docs/failure-modes.md states, from Redis accepting connections again: the published state back in Redis
 * and on every server (the worker probes every second), and every decision back on Redis (a
 * breaker whose first probe after reconnection missed the 25 ms budget waits out its 5 s).
 */
const RESTORE_BOUND_MS = 5_000;
const RECOVERY_BOUND_MS = 10_000;
const PREFIX = "chaos:";

const POLICY = `
version: 1
defaults: { failureMode: open }
operations:
  - { name: reads, match: ["GET /v1/reads"] }
  - { name: writes, match: ["POST /v1/writes"], failureMode: closed }
  - { name: shared, match: ["GET /v1/shared"], failureMode: local }
tiers:
  - name: basic
    weight: 1
    limits:
      - { operation: reads, scope: api_key, algorithm: fixed_window, limit: 1000000, window: 1m }
      - { operation: writes, scope: tenant, algorithm: fixed_window, limit: 1000000, window: 1m }
      - { operation: shared, scope: tenant, algorithm: sliding_window_log, limit: 20, window: 1m }
tenants:
  - slug: chaos-a
    name: Chaos A
    tier: basic
    keys: [{ name: warm, key: sk_chaos_warm_0001 }]
  - slug: chaos-b
    name: Chaos B
    tier: basic
    keys: [{ name: first, key: sk_chaos_b_first_0001 }]
`;
const WARM_KEY = "sk_chaos_warm_0001";

interface Answer {
  allowed: boolean;
  status: number;
  reason: string;
  degraded?: boolean;
  tenant: string | null;
}

interface Seen {
  atMs: number;
  server: number;
  http: number;
  answer: Answer | null;
}

let own: OwnRedis;
let fresh: FreshDatabase;
let db: PrismaClient;
let token: string;
/** Keys of chaos-b created after the servers started (and warmed their caches): no server has seen them. */
const freshKeys: string[] = [];
let servers: SpawnedServer[] = [];
let worker: SpawnedWorker;
/** A connection of the test's own to the test's redis-server. */
let probe: Redis;

async function check(s: SpawnedServer, body: object): Promise<{ http: number; answer: Answer | null }> {
  const res = await fetch(`${s.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(5_000),
  });
  const text = await res.text();
  return { http: res.status, answer: res.status === 200 ? (JSON.parse(text) as Answer) : null };
}

async function readiness(s: SpawnedServer): Promise<{ http: number; body: { ready: boolean; missing: string[]; breaker: string } }> {
  const res = await fetch(`${s.url}/readyz`, { signal: AbortSignal.timeout(5_000) });
  return { http: res.status, body: (await res.json()) as { ready: boolean; missing: string[]; breaker: string } };
}

async function until(what: string, timeoutMs: number, test: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (await test().catch(() => false)) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`not within ${timeoutMs} ms: ${what}`);
}

/** Redis holds the published state again and no server reports anything missing. */
async function restored(): Promise<boolean> {
  for (const s of servers) {
    const r = await readiness(s);
    if (r.http !== 200 || r.body.missing.length > 0) return false;
  }
  return (await probe.exists(keys.policyCurrent())) === 1;
}

/** Restored, and a key neither server has seen resolves through Redis on both (no failure mode). */
async function recovered(freshKey: string): Promise<boolean> {
  if (!(await restored())) return false;
  for (const s of servers) {
    const { answer } = await check(s, { key: freshKey, operation: "GET /v1/reads" });
    if (!answer || answer.reason !== "ok" || answer.degraded || answer.tenant !== "chaos-b") return false;
  }
  return true;
}

/** Constant load on both servers with the warm key, the open operation and the closed one. */
function startLoad(): { stop: () => Promise<Seen[]> } {
  const seen: Seen[] = [];
  let running = true;
  const loops = servers.flatMap((s, server) =>
    [0, 1, 2].map(async (i) => {
      while (running) {
        const operation = i === 2 ? "POST /v1/writes" : "GET /v1/reads";
        try {
          const r = await check(s, { key: WARM_KEY, operation });
          seen.push({ atMs: Date.now(), server, http: r.http, answer: r.answer });
        } catch {
          seen.push({ atMs: Date.now(), server, http: 0, answer: null });
        }
      }
    }),
  );
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return seen;
    },
  };
}

beforeAll(async () => {
  process.env.SLUICE_REDIS_PREFIX = PREFIX;
  own = await startOwnRedis();
  fresh = await freshDatabase();
  db = fresh.db;
  const redis = new Redis(own.url);
  await applyPolicyFile(db, POLICY, { actor: "test:chaos" });
  token = (await createApiToken({ db, redis }, { kind: "service", name: "gateway" }, "test:chaos")).token;
  await publishPolicy({ db, redis }, { actor: "test:chaos" });
  redis.disconnect();
  probe = new Redis(own.url, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  probe.on("error", () => undefined);
  // The product's defaults (25 ms store budget, 5 s policy poll), not the harness's lenient ones.
  const env = { REDIS_URL: own.url, SLUICE_REDIS_PREFIX: PREFIX, SLUICE_INSTANCES: "2", REDIS_TIMEOUT_MS: "25", POLICY_POLL_MS: "5000" };
  servers = await Promise.all([0, 1].map(() => spawnDecisionServer(env, { waitReady: true })));
  worker = await spawnWorker({ DATABASE_URL: fresh.url, REDIS_URL: own.url, SLUICE_REDIS_PREFIX: PREFIX });
  for (let i = 0; i < 3; i++) freshKeys.push((await createApiKey({ db, redis: probe }, { tenant: "chaos-b", name: `fresh${i}` }, { actor: "test:chaos", role: "admin" })).key);
}, 180_000);

afterAll(async () => {
  if (worker?.child.pid) worker.child.kill("SIGCONT");
  await worker?.stop();
  await Promise.all(servers.map((s) => s.stop()));
  probe?.disconnect();
  await fresh?.drop();
  await own?.stop();
});

describe("Redis restarting empty under load", () => {
  it(`keeps answering with the last good state, says what is missing, is restored without a publish within ${RESTORE_BOUND_MS} ms and back on Redis within ${RECOVERY_BOUND_MS} ms`, async () => {
    for (const s of servers) expect((await check(s, { key: WARM_KEY, operation: "GET /v1/reads" })).answer).toMatchObject({ allowed: true, reason: "ok" });
    const load = startLoad();

    // 1. Nobody restores (worker paused): the decision servers keep the last good state.
    worker.child.kill("SIGSTOP");
    await own.kill();
    await new Promise((r) => setTimeout(r, 1_500));
    await own.start();
    await until("both servers report the loss on /readyz", 10_000, async () => {
      for (const s of servers) {
        const r = await readiness(s);
        if (r.http !== 200 || !r.body.ready || r.body.missing.join() !== "keyIndex,policy,serviceTokens") return false;
      }
      return true;
    });
    // A key the servers never resolved (created after they warmed up) cannot be resolved now: its
    // failure mode answers, not a 401.
    await until("an unresolvable key takes the failure mode once Redis answers", 10_000, async () => {
      const { answer } = await check(servers[0]!, { key: freshKeys[0]!, operation: "GET /v1/reads" });
      return answer !== null && answer.allowed && answer.degraded === true && answer.reason === "ok";
    });
    const closed = await check(servers[0]!, { key: freshKeys[0]!, operation: "POST /v1/writes" });
    expect(closed.answer).toMatchObject({ allowed: false, status: 503, reason: "store_unavailable" });

    // The worker comes back: everything is restored without a publish.
    worker.child.kill("SIGCONT");
    const afterResumeMs = await until("restored after the worker resumed", 30_000, () => recovered(freshKeys[1]!));

    // 2. The worker running: the recovery bound, from Redis accepting connections again.
    await own.kill();
    await new Promise((r) => setTimeout(r, 1_500));
    await own.start();
    const upAt = Date.now();
    await until("the worker wrote the state back", 30_000, async () => (await probe.exists(keys.policyCurrent())) === 1);
    const inRedisMs = Date.now() - upAt;
    await until("restored with the worker running", 30_000, restored);
    const restoredMs = Date.now() - upAt;
    await until("back on Redis with the worker running", 30_000, () => recovered(freshKeys[2]!));
    const recoveryMs = Date.now() - upAt;
    console.log(`Redis restarted empty: with the worker paused, everything back ${afterResumeMs} ms after it resumed; with it running, the state back in Redis ${inRedisMs} ms, on both servers ${restoredMs} ms and every decision back on Redis ${recoveryMs} ms after Redis returned`);

    const seen = await load.stop();
    expect(restoredMs).toBeLessThanOrEqual(RESTORE_BOUND_MS);
    expect(recoveryMs).toBeLessThanOrEqual(RECOVERY_BOUND_MS);
    // Throughout: the service token was never unknown, the warm key never unknown, no 5xx, and the
    // fail-open operation kept passing (degraded while Redis was away, then not).
    const reads = seen.filter((s) => s.answer !== null && s.http === 200);
    expect(seen.length).toBeGreaterThan(100);
    expect(seen.filter((s) => s.http !== 200)).toEqual([]);
    expect(seen.filter((s) => s.answer?.reason === "unknown_key" || s.answer?.status === 401)).toEqual([]);
    expect(reads.filter((s) => s.answer!.status !== 503 && !s.answer!.allowed)).toEqual([]);
    expect(reads.some((s) => s.answer!.degraded)).toBe(true);
    // Nothing was published meanwhile: the same single version.
    expect(await db.policyVersion.count()).toBe(1);
    expect(worker.output()).toContain("restored it from PostgreSQL");
  }, 180_000);

  it("failure mode local never admits more than its share, through the outage and after Redis returns empty, for a key resolved before and for one that cannot be resolved (defect 2)", async () => {
    // A key of chaos-a that no server has seen: unresolvable while Redis is away or has lost its index.
    const lateKey = (await createApiKey({ db, redis: probe }, { tenant: "chaos-a", name: "late" }, { actor: "test:chaos", role: "admin" })).key;
    const share = 20 / servers.length; // the tenant's 20/min, SLUICE_INSTANCES=2
    const seen: { server: number; key: "warm" | "late"; answer: Answer | null }[] = [];
    let running = true;
    /** When Redis accepted connections again; answers to requests sent after it may say "back on Redis". */
    let upAtMs = Infinity;
    const backOnRedis = new Set<number>();
    // Redis goes first, so that every answer below comes from the failure path or from Redis
    // after its return (no counter or deny-cache entry of this operation exists yet).
    await own.kill();
    const loops = servers.flatMap((s, server) =>
      (["warm", "warm", "late", "late"] as const).map(async (key) => {
        while (running) {
          const sentAtMs = Date.now();
          const r = await check(s, { key: key === "warm" ? WARM_KEY : lateKey, operation: "GET /v1/shared" }).catch(() => ({ http: 0, answer: null }));
          seen.push({ server, key, answer: r.answer });
          if (sentAtMs > upAtMs && key === "warm" && r.answer && !r.answer.degraded) backOnRedis.add(server);
        }
      }),
    );
    await new Promise((r) => setTimeout(r, 2_500));
    await own.start();
    upAtMs = Date.now();
    // Hammer on until both servers decide through Redis again (the seconds after its return, with
    // the breaker still open, are where 19,065 requests were waved through), and a little longer.
    await until("both servers back on Redis", 30_000, async () => backOnRedis.size === servers.length);
    await new Promise((r) => setTimeout(r, 500));
    running = false;
    await Promise.all(loops);

    const degraded = seen.filter((x) => x.answer?.degraded);
    expect(degraded.length).toBeGreaterThan(4 * share);
    for (let server = 0; server < servers.length; server++) {
      for (const key of ["warm", "late"] as const) {
        const mine = degraded.filter((x) => x.server === server && x.key === key);
        const admitted = mine.filter((x) => x.answer!.allowed).length;
        console.log(`server ${server}, ${key} key: ${admitted} admitted of ${mine.length} degraded answers (share ${share})`);
        expect(admitted).toBeGreaterThan(0);
        expect(admitted).toBeLessThanOrEqual(share);
        expect(mine.filter((x) => !x.answer!.allowed).every((x) => x.answer!.reason === "rate_limited")).toBe(true);
      }
    }
    // The late key is unresolvable while degraded: nobody's tenant in the answer.
    expect(degraded.filter((x) => x.key === "late").every((x) => x.answer!.tenant === null)).toBe(true);
  }, 120_000);
});
