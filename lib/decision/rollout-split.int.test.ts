/**
 * A guarded rollout on the decision servers: two servers (one of them two decision processes
 * behind its supervisor) follow a rollout's routing in Redis, and every tenant gets the same
 * version — with that version's limit in the answer and in RateLimit-Policy — from each of them.
 * The cohort is exactly the one the control plane computes (lib/policy/rollout.ts, one function).
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { testRedisPrefix, testRedisUrl, until } from "../../test/helpers";
import type { PolicyFileInput } from "../policy/policy-file";
import { cohortMembers } from "../policy/rollout";
import { clearRolloutRouting, writeRolloutRouting } from "../redis/rollout";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";
import { compileFixture, writeFixturePolicy } from "./testing/fixture";

const TOKEN = "svc_rollout_0001";
const TENANTS = Array.from({ length: 200 }, (_, i) => `t${String(i).padStart(3, "0")}`);
let redis: Redis;
let servers: SpawnedServer[] = [];

function policy(limit: number): PolicyFileInput {
  return {
    version: 1,
    defaults: { failureMode: "open" },
    operations: [{ name: "orders-read", match: ["GET /v1/orders"] }],
    tiers: [{ name: "free", limits: [{ operation: "*", scope: "tenant", algorithm: "fixed_window", limit, window: "1m" }] }],
    globalCaps: [],
    tenants: TENANTS.map((slug) => ({ slug, name: slug, tier: "free", keys: [] })),
  };
}

const live = compileFixture(policy(5), 1);
const candidate = compileFixture(policy(7), 2);
const routing = (percent: number) => ({ id: "ro_split_test", liveVersion: 1, candidateVersion: 2, candidateChecksum: candidate.doc.checksum, canaries: ["t199"], percent, step: 1 });

beforeAll(async () => {
  const prefix = `${testRedisPrefix()}rs${randomBytes(3).toString("hex")}:`;
  process.env.SLUICE_REDIS_PREFIX = prefix;
  redis = new Redis(testRedisUrl());
  await writeFixturePolicy(redis, live);
  const env = { REDIS_URL: testRedisUrl(), SLUICE_REDIS_PREFIX: prefix, SLUICE_SERVICE_TOKENS: TOKEN, POLICY_POLL_MS: "5000" };
  servers = await Promise.all([spawnDecisionServer(env, { waitReady: true }), spawnDecisionServer({ ...env, SLUICE_DECISION_PROCESSES: "2" }, { waitReady: true })]);
}, 120_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  redis?.disconnect();
});

interface Answer {
  policyVersion: number;
  limit: number;
  headers: Record<string, string>;
  /** Past the store budget on a loaded machine: passed without a counter's figures (limit 0), still with its version. */
  degraded?: boolean;
}

async function check(s: SpawnedServer, tenant: string): Promise<Answer & { header: string | null }> {
  const res = await fetch(`${s.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ tenant, operation: "GET /v1/orders" }),
  });
  const body = (await res.json()) as Answer;
  return { ...body, header: res.headers.get("ratelimit-policy") };
}

/** Each tenant's version as each server answers it, `rounds` times per server (a multi-process server spreads them). */
async function versions(rounds: number): Promise<Map<string, Set<string>>> {
  const seen = new Map<string, Set<string>>();
  const jobs = Array.from({ length: rounds }, () => servers.flatMap((s) => TENANTS.map((tenant) => ({ s, tenant })))).flat();
  // 20 at a time: hundreds of simultaneous connections test the machine, not the rollout.
  for (let i = 0; i < jobs.length; i += 20) {
    await Promise.all(
      jobs.slice(i, i + 20).map(async ({ s, tenant }) => {
        const a = await check(s, tenant);
        const set = seen.get(tenant) ?? new Set<string>();
        set.add(a.degraded ? `v${a.policyVersion} degraded` : `v${a.policyVersion} limit ${a.limit} ${a.header ?? a.headers["RateLimit-Policy"]}`);
        seen.set(tenant, set);
      }),
    );
  }
  return seen;
}

/** A tenant's answers with the store's figures; a degraded answer (no figures) must still carry the version the others do. */
function decided(seen: Map<string, Set<string>>, tenant: string): string[] {
  const all = [...seen.get(tenant)!];
  const full = all.filter((a) => !a.endsWith(" degraded"));
  for (const a of all.filter((x) => x.endsWith(" degraded"))) expect({ tenant, a }).toEqual({ tenant, a: `${(full[0] ?? a).split(" ")[0]} degraded` });
  return full.length > 0 ? full : all;
}

it("answers the cohort with v2 and everyone else with v1, the same from every server and process, with that version's limit and RateLimit-Policy", async () => {
  await writeRolloutRouting(redis, candidate.doc, routing(10));
  const cohort = cohortMembers({ salt: "ro_split_test", canaries: ["t199"], percent: 10 }, TENANTS);
  expect(cohort.size).toBeGreaterThanOrEqual(20);
  expect(cohort.size).toBeLessThanOrEqual(21);
  await until("every server to answer the canary with v2", async () => (await Promise.all(servers.map((s) => check(s, "t199")))).every((a) => a.policyVersion === 2), 5_000);
  await until("every server to answer a percentage tenant with v2", async () => (await Promise.all(servers.map((s) => check(s, [...cohort].find((t) => t !== "t199")!)))).every((a) => a.policyVersion === 2));
  const seen = await versions(2);
  for (const tenant of TENANTS) {
    const want = cohort.has(tenant) ? 'v2 limit 7 "free-tenant";q=7;w=60' : 'v1 limit 5 "free-tenant";q=5;w=60';
    expect({ tenant, answers: decided(seen, tenant) }).toEqual({ tenant, answers: [want] });
  }
  // /metrics carries the version that decided.
  const metrics = await (await fetch(`${servers[0]!.url}/metrics`)).text();
  expect(metrics).toMatch(/sluice_decisions_by_policy_version_total\{policy_version="2",outcome="allowed"\} [1-9]/);
  expect(metrics).toMatch(/sluice_decisions_by_policy_version_total\{policy_version="1",outcome="allowed"\} [1-9]/);
  expect(metrics).toMatch(/sluice_rollout_candidate_version 2/);
}, 120_000);

it("a cohort only grows with the next step, and a rollback sends everyone back to v1 at once", async () => {
  await writeRolloutRouting(redis, candidate.doc, routing(50));
  const half = cohortMembers({ salt: "ro_split_test", canaries: ["t199"], percent: 50 }, TENANTS);
  await until("every server to answer the 50% cohort with v2", async () => (await Promise.all(servers.map((s) => check(s, [...half].sort()[0]!)))).every((a) => a.policyVersion === 2), 5_000);
  const seen = await versions(1);
  for (const tenant of TENANTS) expect([...seen.get(tenant)!].every((a) => a.startsWith(half.has(tenant) ? "v2" : "v1"))).toBe(true);

  const rolledBackAt = performance.now();
  await clearRolloutRouting(redis, 1);
  await until("every server to answer the canary with v1 again", async () => (await Promise.all(servers.map((s) => check(s, "t199")))).every((a) => a.policyVersion === 1), 5_000);
  expect(performance.now() - rolledBackAt).toBeLessThan(2_000);
  const after = await versions(1);
  for (const tenant of TENANTS) expect({ tenant, answers: decided(after, tenant) }).toEqual({ tenant, answers: ['v1 limit 5 "free-tenant";q=5;w=60'] });
}, 120_000);
