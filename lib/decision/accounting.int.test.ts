/**
 * Metrics and usage count exactly the decisions answered (#12 item 1): the decision path counts in
 * plain numbers (lib/decision/metrics.ts, lib/redis/usage.ts) and hands them over at scrape and
 * flush time, and that must lose or invent nothing. A real decision server, on a redis-server of
 * this file's own (paused for the degraded phase), answers a mix of allowed, denied (429, 401,
 * 403), shadow-denied, dry-run, batch and degraded / fail-closed decisions; then `/metrics` and
 * the per-minute usage aggregates in Redis must equal, cell by cell, what the answers said.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OwnRedis, startOwnRedis } from "../processes/redis-server";
import { sha256Hex } from "../redis/key-index";
import { listUsageMinutes, readUsageMinute } from "../redis/testing/usage-minutes";
import type { DecisionAnswer } from "./answer";
import { compileFixture, FIXTURE_KEYS, writeFixturePolicy } from "./testing/fixture";
import { spawnDecisionServer, type SpawnedServer } from "../processes/harness";

const TOKEN = "svc_accounting_0001";
const PREFIX = "acct:";
let own: OwnRedis;
let redis: Redis;
let server: SpawnedServer;

beforeAll(async () => {
  own = await startOwnRedis();
  process.env.SLUICE_REDIS_PREFIX = PREFIX;
  redis = new Redis(own.url);
  await writeFixturePolicy(redis, compileFixture(), [sha256Hex(TOKEN)]);
  server = await spawnDecisionServer({ REDIS_URL: own.url, SLUICE_REDIS_PREFIX: PREFIX, SLUICE_SERVICE_TOKENS: TOKEN }, { waitReady: true });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  redis?.disconnect();
  await own?.stop();
});

type Body = Record<string, unknown>;

async function post(body: Body): Promise<DecisionAnswer[]> {
  const res = await fetch(`${server.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  expect(res.status).toBe(200);
  const json = (await res.json()) as DecisionAnswer | { results: DecisionAnswer[] };
  return "results" in json ? json.results : [json];
}

/** The engine's outcome of an answer (lib/decision/engine.ts finish). */
function outcomeOf(a: DecisionAnswer): "allowed" | "denied" | "degraded" | "shadow_denied" {
  if (!a.allowed) return "denied";
  if (a.degraded) return "degraded";
  if (a.shadowDenied) return "shadow_denied";
  return "allowed";
}

class Tally {
  readonly cells = new Map<string, number>();
  add(key: string): void {
    this.cells.set(key, (this.cells.get(key) ?? 0) + 1);
  }
  sorted(): [string, number][] {
    return [...this.cells].sort(([a], [b]) => a.localeCompare(b));
  }
}

/** sluice_decisions_total by `outcome|tier|operation`, and the latency histogram's total count. */
async function scrape(): Promise<{ decisions: Tally; latencyCount: number }> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const decisions = new Tally();
  let latencyCount = 0;
  for (const line of text.split("\n")) {
    const d = /^sluice_decisions_total\{outcome="([^"]*)",tier="([^"]*)",operation="([^"]*)"\} (\d+)$/.exec(line);
    if (d) decisions.cells.set(`${d[1]}|${d[2]}|${d[3]}`, Number(d[4]));
    const c = /^sluice_decision_duration_seconds_count\{outcome="[^"]*"\} (\d+)$/.exec(line);
    if (c) latencyCount += Number(c[1]);
  }
  return { decisions, latencyCount };
}

/** The usage aggregates of every minute: decisions by `tenant|tier|operation|outcome`, key and latency totals. */
async function usage(): Promise<{ decisions: Tally; keyTotal: number; latencyTotal: number }> {
  const decisions = new Tally();
  let keyTotal = 0;
  let latencyTotal = 0;
  for (const m of await listUsageMinutes(redis)) {
    const u = await readUsageMinute(redis, m);
    for (const d of u.decisions) decisions.cells.set(`${d.tenant}|${d.tier}|${d.operation}|${d.outcome}`, (decisions.cells.get(`${d.tenant}|${d.tier}|${d.operation}|${d.outcome}`) ?? 0) + d.count);
    for (const k of u.keys) keyTotal += k.count;
    latencyTotal += [...u.latency.allowed, ...u.latency.denied].reduce((a, b) => a + b, 0);
  }
  return { decisions, keyTotal, latencyTotal };
}

describe("accounting", () => {
  it("/metrics and the usage aggregates equal, cell by cell, the decisions answered (allowed, denied, shadow, dry runs, batches, degraded, fail-closed)", async () => {
    const metricsExpected = new Tally();
    const usageExpected = new Tally();
    let decided = 0;
    let recorded = 0;
    const answered = (answers: DecisionAnswer[], dryRun: boolean) => {
      for (const a of answers) {
        const outcome = outcomeOf(a);
        metricsExpected.add(`${a.status === 503 ? "unavailable" : outcome}|${a.tier ?? "_"}|${a.operation ?? "*"}`);
        decided++;
        if (dryRun) continue;
        usageExpected.add(`${a.tenant ?? "_"}|${a.tier ?? "_"}|${a.operation ?? "*"}|${outcome}`);
        recorded++;
      }
    };

    // Phase 1, Redis up: a seeded random mix, 16 requests in flight at a time.
    const bodies: { body: Body; dryRun: boolean }[] = [];
    let seed = 12;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return Math.floor((seed / 2 ** 31) * n); // the high bits: an LCG's low bits cycle

    };
    const ops = ["GET /v1/orders/1", "GET /v1/search", "POST /v1/heavy", "GET /v1/unmatched", "POST /v1/exports"];
    const keys = [FIXTURE_KEYS.acme, FIXTURE_KEYS.acme2, FIXTURE_KEYS.big, FIXTURE_KEYS.suspended, FIXTURE_KEYS.shadow, FIXTURE_KEYS.quota, FIXTURE_KEYS.burst1, "sk_unknown_accounting"];
    for (let i = 0; i < 400; i++) {
      const one = (): Body => ({ key: keys[random(keys.length)], operation: ops[random(ops.length)], ip: `198.51.100.${random(4)}` });
      const r = random(20);
      if (r === 0) bodies.push({ body: { requests: Array.from({ length: 1 + random(8) }, one) }, dryRun: false });
      else if (r === 1) bodies.push({ body: { ...one(), dryRun: true }, dryRun: true });
      else if (r === 2) bodies.push({ body: { tenant: "big", operation: ops[random(ops.length)] }, dryRun: false });
      else bodies.push({ body: one(), dryRun: false });
    }
    for (let i = 0; i < bodies.length; i += 16) {
      const chunk = bodies.slice(i, i + 16);
      const results = await Promise.all(chunk.map((b) => post(b.body)));
      results.forEach((answers, j) => answered(answers, chunk[j]!.dryRun));
    }

    // Phase 2, Redis paused: known keys only (their tenants are cached), each failure mode.
    process.kill(own.pid()!, "SIGSTOP");
    try {
      const paused = await Promise.all(
        Array.from({ length: 24 }, (_, i) => post({ key: i % 2 ? FIXTURE_KEYS.big : FIXTURE_KEYS.acme2, operation: ["GET /v1/orders/1", "POST /v1/exports", "GET /v1/search"][i % 3] })),
      );
      paused.forEach((answers) => answered(answers, false));
    } finally {
      process.kill(own.pid()!, "SIGCONT");
    }

    const outcomes = new Set([...metricsExpected.cells.keys()].map((k) => k.split("|")[0]));
    // The mix did what it is for: every kind of outcome was answered.
    expect([...outcomes].sort()).toEqual(["allowed", "degraded", "denied", "shadow_denied", "unavailable"]);

    const metrics = await scrape();
    expect(metrics.decisions.sorted()).toEqual(metricsExpected.sorted());
    expect(metrics.latencyCount).toBe(decided);

    // Usage is flushed every second (a flush that failed while Redis was paused is resent, once).
    let seen = await usage();
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && [...seen.decisions.cells.values()].reduce((a, b) => a + b, 0) < recorded) {
      await new Promise((r) => setTimeout(r, 250));
      seen = await usage();
    }
    await new Promise((r) => setTimeout(r, 1_200)); // one more flush: nothing may be added twice
    seen = await usage();
    expect(seen.decisions.sorted()).toEqual(usageExpected.sorted());
    expect(seen.keyTotal).toBe(recorded);
    expect(seen.latencyTotal).toBe(recorded);
  }, 120_000);
});
