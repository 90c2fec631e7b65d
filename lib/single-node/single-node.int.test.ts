/**
 * Single-node mode end to end (docs/architecture.md "Modes"), against real PostgreSQL and real decision server
 * processes, with no Redis: a policy published in Postgres limits a key (429 + Retry-After), a new
 * version is picked up, revoked keys and service tokens stop working within a second or two, N
 * decisions appear as exactly N in the rollups the usage API reads, quota counters survive a
 * restart, misconfiguration and a second replica are refused. The one Redis in this file is a
 * throwaway server REDIS_URL points at, to prove that nothing connects to it.
 */
import { DECISION_NODE_FLAGS } from "../decision/process-flags";
import { spawn } from "node:child_process";
import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase, type FreshDatabase } from "../../test/helpers";
import { type Db } from "../db/client";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";
import { freePort } from "../net/ports";
import { startOwnRedis, type OwnRedis } from "../processes/redis-server";
import type { PolicyFileInput } from "../policy/policy-file";
import { applyPolicyFile } from "../services/policy/apply-policy-file";
import { createApiKey } from "../services/access/create-api-key";
import { createApiToken, revokeApiToken } from "../services/access/create-api-token";
import { publishPolicy } from "../services/policy/publish-policy";
import { revokeApiKey } from "../services/access/revoke-api-key";
import { rollbackPolicy } from "../services/policy/rollback-policy";
import { getUsage } from "../services/observe/usage-query";

const ROOT = path.resolve(import.meta.dirname, "../..");
const KEYS = { a: "sk_sn_acme_a_0001", b: "sk_sn_acme_b_0001", c: "sk_sn_acme_c_0001", meter: "sk_sn_meter_0001" } as const;
const actor = "test:single-node";
const editor = { actor, role: "admin" } as const;

/** Failure mode `closed`: anything that went wrong in the store or key lookup would show as a 503, never pass silently. */
function policy(freeLimit: number): PolicyFileInput {
  return {
    version: 1,
    defaults: { failureMode: "closed" },
    operations: [{ name: "orders-read", match: ["GET /v1/orders", "GET /v1/orders/*"] }],
    tiers: [
      { name: "free", weight: 1, limits: [{ operation: "*", scope: "api_key", algorithm: "token_bucket", limit: freeLimit, window: "1h", burst: freeLimit }] },
      { name: "metered", weight: 1, limits: [], quotas: [{ operation: "*", period: "month", limit: 3, overage: "block" }] },
    ],
    globalCaps: [],
    tenants: [
      { slug: "acme", name: "Acme", tier: "free", keys: [{ name: "a", key: KEYS.a }, { name: "b", key: KEYS.b }, { name: "c", key: KEYS.c }] },
      { slug: "meter", name: "Meter", tier: "metered", keys: [{ name: "a", key: KEYS.meter }] },
    ],
  };
}

let fresh: FreshDatabase;
let db: Db;
let ownRedis: OwnRedis;
let server: SpawnedServer;
let serviceToken: string;
let startedMs: number;
/** Every decision the server made, per tenant ("_" unknown key): passed and denied. */
const counted: Record<string, { passed: number; denied: number }> = {};
let decisions = 0;
/** Connections the throwaway Redis had received before any decision server ran. */
let redisConnectionsBefore = 0;

async function redisConnections(): Promise<number> {
  const probe = new Redis(ownRedis.url);
  try {
    return Number(/total_connections_received:(\d+)/.exec(await probe.info("stats"))?.[1]);
  } finally {
    probe.disconnect();
  }
}

interface Answer {
  allowed: boolean;
  status: number;
  reason: string;
  tenant: string | null;
  limit: number;
  policyVersion: number;
  retryAfterSeconds: number;
  headers: Record<string, string>;
}

async function check(key: string, token = serviceToken): Promise<{ http: number; answer: Answer }> {
  const res = await fetch(`${server.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ key, operation: "GET /v1/orders/42", ip: "203.0.113.7" }),
    signal: AbortSignal.timeout(10_000),
  });
  const answer = (await res.json()) as Answer;
  if (res.status === 200) {
    decisions++;
    const c = (counted[answer.tenant ?? "_"] ??= { passed: 0, denied: 0 });
    if (answer.allowed) c.passed++;
    else c.denied++;
  }
  return { http: res.status, answer };
}

/** Polls `probe` until it returns true; the elapsed ms, or throws after `timeoutMs`. */
async function within(timeoutMs: number, probe: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (await probe()) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`not within ${timeoutMs} ms`);
}

function serverEnv(): Record<string, string> {
  return { SLUICE_MODE: "single-node", DATABASE_URL: fresh.url, REDIS_URL: ownRedis.url, SLUICE_SERVICE_TOKENS: "", SLUICE_INSTANCES: "1" };
}

/** Runs a decision server that is expected to refuse to start; its exit code and output. */
async function runToExit(env: Record<string, string | undefined>): Promise<{ code: number | null; out: string }> {
  const port = await freePort();
  return new Promise((resolve, reject) => {
    const merged: NodeJS.ProcessEnv = { ...process.env, DECISION_HOST: "127.0.0.1", DECISION_PORT: String(port), SLUICE_GRPC_PORT: "0", ...env };
    for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
    const child = spawn(process.execPath, [...DECISION_NODE_FLAGS, "--import", "tsx", path.join(ROOT, "worker/decision-server.ts")], { cwd: ROOT, env: merged, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

beforeAll(async () => {
  startedMs = Date.now();
  ownRedis = await startOwnRedis();
  redisConnectionsBefore = await redisConnections();
  fresh = await freshDatabase();
  db = fresh.db;
  await applyPolicyFile(db, policy(5), { actor });
  serviceToken = (await createApiToken({ db, redis: null }, { kind: "service", name: "gateway" }, actor)).token;
  const published = await publishPolicy({ db, redis: null }, { actor, note: "single-node test" });
  expect(published).toMatchObject({ status: "published", version: 1 });
  server = await spawnDecisionServer(serverEnv(), { waitReady: true });
});

afterAll(async () => {
  await server?.stop().catch(() => undefined);
  await fresh?.drop();
  await ownRedis?.stop();
});

describe("single-node decision server (no Redis)", () => {
  it("is ready from Postgres alone, says so, and refuses tokens that are not published", async () => {
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ ready: true, policyVersion: 1, mode: "single-node", keysLoaded: true, postgres: true });
    expect(server.output()).toContain("single-node mode: no Redis");
    expect(server.output()).toContain("REDIS_URL is set but ignored");
    expect((await check(KEYS.a, "sl_svc_not_a_real_token")).http).toBe(401);
  });

  it("limits a key by the published rule: the (N+1)-th request is 429 with an honest Retry-After", async () => {
    const answers: Answer[] = [];
    for (let i = 0; i < 6; i++) {
      const { http, answer } = await check(KEYS.a);
      expect(http).toBe(200);
      answers.push(answer);
    }
    for (const a of answers.slice(0, 5)) expect(a).toMatchObject({ allowed: true, status: 200, tenant: "acme", limit: 5, policyVersion: 1 });
    const denied = answers[5]!;
    expect(denied).toMatchObject({ allowed: false, status: 429, reason: "rate_limited", tenant: "acme" });
    // Token bucket 5 per hour: one token back every 720 s.
    expect(denied.retryAfterSeconds).toBeGreaterThan(600);
    expect(denied.retryAfterSeconds).toBeLessThanOrEqual(720);
    expect(denied.headers["Retry-After"]).toBe(String(denied.retryAfterSeconds));
  });

  it("enforces a quota and answers 401 for an unknown key", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await check(KEYS.meter)).answer.status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await check(KEYS.meter)).answer.reason).toBe("quota_exhausted");
    expect((await check("sk_sn_unknown_0001")).answer).toMatchObject({ status: 401, reason: "unknown_key" });
  });

  it("picks up a newly published version (and a rollback) within a couple of polls", async () => {
    await applyPolicyFile(db, policy(2), { actor });
    expect(await publishPolicy({ db, redis: null }, { actor })).toMatchObject({ status: "published", version: 2 });
    const ms = await within(5_000, async () => ((await (await fetch(`${server.url}/readyz`)).json()) as { policyVersion: number }).policyVersion === 2);
    expect(ms).toBeLessThan(3_000);
    const b = [await check(KEYS.b), await check(KEYS.b), await check(KEYS.b)].map((r) => r.answer);
    expect(b.map((a) => a.status)).toEqual([200, 200, 429]);
    expect(b[0]).toMatchObject({ limit: 2, policyVersion: 2 });

    expect(await rollbackPolicy({ db, redis: null }, { actor, toVersion: 1 })).toMatchObject({ status: "published", version: 3 });
    await within(5_000, async () => ((await (await fetch(`${server.url}/readyz`)).json()) as { policyVersion: number }).policyVersion === 3);
    expect((await check(KEYS.c)).answer).toMatchObject({ allowed: true, limit: 5, policyVersion: 3 });

    // A version that does not validate (its checksum no longer matches its body) never replaces the last good one.
    const good = (await db.policyVersion.findUniqueOrThrow({ where: { version: 3 } })).document as Record<string, unknown>;
    const tampered = { ...good, version: 4, defaults: { failureMode: "open" } };
    await db.policyVersion.create({ data: { version: 4, document: JSON.parse(JSON.stringify(tampered)), checksum: String(good.checksum), author: "test:tamper" } });
    await within(5_000, async () => server.output().includes("policy v4 rejected"));
    expect(await (await fetch(`${server.url}/readyz`)).json()).toMatchObject({ ready: true, policyVersion: 3 });
    expect(server.output()).toContain("keeping v3");
    // The next publish (v5) is taken.
    expect(await publishPolicy({ db, redis: null }, { actor })).toMatchObject({ status: "published", version: 5 });
    await within(5_000, async () => ((await (await fetch(`${server.url}/readyz`)).json()) as { policyVersion: number }).policyVersion === 5);
  });

  it("stops accepting a revoked key within ~1 s, and accepts a new key as fast", async () => {
    expect((await check(KEYS.c)).answer.status).toBe(200);
    await revokeApiKey({ db, redis: null }, { tenant: "acme", name: "c" }, editor);
    const revokedMs = await within(5_000, async () => (await check(KEYS.c)).answer.status === 401);
    expect(revokedMs).toBeLessThan(2_000);
    expect((await check(KEYS.c)).answer).toMatchObject({ status: 401, reason: "unknown_key" });

    const created = await createApiKey({ db, redis: null }, { tenant: "acme", name: "d" }, editor);
    const createdMs = await within(5_000, async () => (await check(created.key)).answer.status === 200);
    expect(createdMs).toBeLessThan(2_000);
  });

  it("follows service tokens in Postgres: a new one works and a revoked one is refused within ~1 s", async () => {
    const extra = await createApiToken({ db, redis: null }, { kind: "service", name: "second-gateway" }, actor);
    expect(await within(5_000, async () => (await check(KEYS.a, extra.token)).http === 200)).toBeLessThan(2_000);
    await revokeApiToken({ db, redis: null }, { id: extra.id }, actor);
    expect(await within(5_000, async () => (await check(KEYS.a, extra.token)).http === 401)).toBeLessThan(2_000);
  });

  it("refuses a second replica and a misconfigured start, each with a message naming the cause", async () => {
    const second = await runToExit(serverEnv());
    expect(second.code).toBe(1);
    expect(second.out).toContain("another single-node decision server is running against this database");

    const noDb = await runToExit({ ...serverEnv(), DATABASE_URL: undefined });
    expect(noDb.code).toBe(1);
    expect(noDb.out).toContain("DATABASE_URL: required with SLUICE_MODE=single-node");

    const replicas = await runToExit({ ...serverEnv(), SLUICE_INSTANCES: "3" });
    expect(replicas.code).toBe(1);
    expect(replicas.out).toContain("SLUICE_INSTANCES: 3, but SLUICE_MODE=single-node is exactly one decision server");

    const badMode = await runToExit({ ...serverEnv(), SLUICE_MODE: "single" });
    expect(badMode.code).toBe(1);
    expect(badMode.out).toContain("SLUICE_MODE: expected redis or single-node");
  }, 120_000);

  it("writes every decision to the usage rollups exactly once, and seeds quota counters after a restart", async () => {
    expect(decisions).toBeGreaterThan(20);
    // A clean stop writes the minute in progress too.
    expect(await server.stop("SIGTERM")).toBe(0);

    const from = new Date(Math.floor(startedMs / 60_000) * 60_000 - 60_000).toISOString();
    const to = new Date(Date.now() + 120_000).toISOString();
    for (const [tenant, c] of Object.entries(counted)) {
      if (tenant === "_") continue;
      const usage = await getUsage(db, { from, to, granularity: "minute", tenant });
      const sum = usage.points.reduce((s, p) => ({ passed: s.passed + p.allowed + p.degraded + p.shadowDenied, denied: s.denied + p.denied }), { passed: 0, denied: 0 });
      expect(sum, tenant).toEqual(c);
      expect(usage.points.reduce((s, p) => s + p.degraded, 0)).toBe(0);
    }
    const all = await getUsage(db, { from, to, granularity: "hour" });
    expect(all.points.reduce((s, p) => s + p.allowed + p.denied + p.shadowDenied + p.degraded, 0)).toBe(decisions);
    const quota = await db.quotaUsage.findMany({ where: { tenant: "meter" } });
    expect(quota.map((q) => Number(q.used))).toEqual([3]);

    // A new process: the monthly quota is spent, and stays spent.
    server = await spawnDecisionServer(serverEnv(), { waitReady: true });
    expect(server.output()).toContain("1 quota counters seeded from QuotaUsage");
    expect((await check(KEYS.meter)).answer).toMatchObject({ status: 429, reason: "quota_exhausted" });
  }, 120_000);

  it("never connected to Redis", async () => {
    // Three decision servers and three refused starts had REDIS_URL pointing here; only this test's probes came.
    expect(await redisConnections()).toBe(redisConnectionsBefore + 1);
    const probe = new Redis(ownRedis.url);
    try {
      expect(await probe.dbsize()).toBe(0);
    } finally {
      probe.disconnect();
    }
  });
});
