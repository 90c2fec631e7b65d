/**
 * Starting and driving decision servers of several regions, for the region tests and `npm run
 * bench:regions` (docs/regions.md): the tests' policy, a region's decision server, checks against
 * one server (a number of them, closed-loop N clients at once, or open-loop at a rate), a window's
 * counter in a region's Redis, the replication status of /readyz, and the most admissions inside
 * any span of time; and three regions at once (startThreeRegions).
 */
import { Redis } from "ioredis";
import { spawnDecisionServer, type SpawnedServer } from "../../lib/processes/harness";
import { type CompiledFixture, writeFixturePolicy } from "../../lib/decision/testing/fixture";
import { startOwnRedis } from "../../lib/processes/redis-server";
import { startLatencyProxy, type LatencyProxy } from "../../lib/net/testing/latency-proxy";
import { startOwnNats, type OwnNats } from "../../lib/net/testing/nats-server";
import type { PolicyFileInput } from "../../lib/policy/policy-file";
import { sha256Hex } from "../../lib/redis/key-index";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What one check said, and when it was sent and answered (Date.now() ms). */
export interface Checked {
  allowed: boolean;
  /** The answer's `remaining` (of the limit it names). */
  remaining: number;
  limit: number;
  /** Decided without the counter store (its budget ran out: the failure mode decided, and nothing was counted). */
  degraded: boolean;
  /** Seconds until the deciding window ends (or, denied, until it is worth retrying), rounded up. */
  resetSeconds: number;
  sentMs: number;
  atMs: number;
}

export interface CheckTarget {
  url: string;
  token: string;
  key: string;
}

export const ORDERS = "GET /v1/orders";

/**
 * The region tests' policy: one tenant, `acme`, with one key, and one fixed_window limit of `limit`
 * per `windowMs` on every operation, `regions` as given. A policy file object: compileFixture takes
 * it, and applyPolicyFile takes it as JSON (a subset of YAML).
 */
export function regionPolicy(o: { key: string; limit: number; windowMs: number; regions: "local" | "split" | "shared" }): PolicyFileInput {
  return {
    version: 1,
    operations: [{ name: "orders", match: [ORDERS] }],
    tiers: [{ name: "free", limits: [{ operation: "*", scope: "tenant", algorithm: "fixed_window", limit: o.limit, window: `${o.windowMs / 1000}s`, regions: o.regions }] }],
    tenants: [{ slug: "acme", name: "Acme", tier: "free", keys: [{ name: "main", key: o.key }] }],
  };
}

/** The tenant counter of regionPolicy's limit for one window, in one region's Redis (0 when absent). */
export async function counterOf(redis: Redis, prefix: string, windowStartMs: number): Promise<number> {
  const keys = await redis.keys(`${prefix}{t:acme}:c:*:_:${windowStartMs}`);
  return keys.length === 0 ? 0 : Number(await redis.get(keys[0]!));
}

/** Waits for the start of the next window of `windowMs` plus `marginMs`, and returns that start. */
export async function nextWindow(windowMs: number, marginMs = 50): Promise<number> {
  const startMs = Date.now() - (Date.now() % windowMs) + windowMs;
  await sleep(startMs - Date.now() + marginMs);
  return startMs;
}

export interface RegionServerOptions {
  region: string;
  redisUrl: string;
  /** SLUICE_REPLICATION_URL (NATS, or a latency proxy in front of it); absent: none. */
  replicationUrl?: string;
  prefix: string;
  token: string;
  env?: Record<string, string>;
}

/**
 * One region's decision server, ready: its Redis, its region, the deny cache off (every check
 * reaches Redis) and a store budget of a second (on a loaded machine a decision past the default
 * 25 ms would take the failure mode's path, which Redis never counts, and the region tests compare
 * what Redis counted).
 */
export function spawnRegionServer(o: RegionServerOptions): Promise<SpawnedServer> {
  return spawnDecisionServer(
    {
      REDIS_URL: o.redisUrl,
      SLUICE_REGION: o.region,
      SLUICE_REDIS_PREFIX: o.prefix,
      SLUICE_SERVICE_TOKENS: o.token,
      SLUICE_DENY_CACHE: "0",
      REDIS_TIMEOUT_MS: "1000",
      ...(o.replicationUrl && { SLUICE_REPLICATION_URL: o.replicationUrl }),
      ...o.env,
    },
    { waitReady: true },
  );
}

export async function checkOnce(t: CheckTarget, timeoutMs = 5_000): Promise<Checked> {
  const sentMs = Date.now();
  const res = await fetch(`${t.url}/v1/check`, {
    method: "POST",
    headers: { authorization: `Bearer ${t.token}`, "content-type": "application/json" },
    body: JSON.stringify({ key: t.key, operation: ORDERS }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const a = (await res.json()) as { allowed?: unknown; remaining?: unknown; limit?: unknown; degraded?: unknown; resetSeconds?: unknown };
  if (typeof a.allowed !== "boolean") throw new Error(`${t.url}/v1/check answered ${res.status} without "allowed"`);
  return { allowed: a.allowed, remaining: Number(a.remaining ?? 0), limit: Number(a.limit ?? 0), degraded: a.degraded === true, resetSeconds: Number(a.resetSeconds ?? 0), sentMs, atMs: Date.now() };
}

export interface Driven {
  admitted: number;
  answers: number;
  /** When each admitted answer arrived (ms), sorted. */
  admittedAtMs: number[];
  /** The slowest answer (ms from sending to arriving). */
  maxLatencyMs: number;
}

/** `n` checks against one server, `concurrency` at a time; how many were admitted. */
export async function sendChecks(t: CheckTarget, n: number, concurrency = 10): Promise<number> {
  let admitted = 0;
  let left = n;
  const one = async () => {
    while (left > 0) {
      left--;
      if ((await checkOnce(t)).allowed) admitted++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, one));
  return admitted;
}

/** Checks against one server, `concurrency` at a time, until `untilMs`. */
export async function drive(t: CheckTarget, untilMs: number, concurrency: number): Promise<Driven> {
  const out: Driven = { admitted: 0, answers: 0, admittedAtMs: [], maxLatencyMs: 0 };
  const loop = async () => {
    while (Date.now() < untilMs) {
      const c = await checkOnce(t);
      out.answers++;
      out.maxLatencyMs = Math.max(out.maxLatencyMs, c.atMs - c.sentMs);
      if (c.allowed) {
        out.admitted++;
        out.admittedAtMs.push(c.atMs);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  out.admittedAtMs.sort((x, y) => x - y);
  return out;
}

/**
 * Open loop: `ratePerSec()` checks a second (read every tick, so the rate may change) against one
 * server until `untilMs`, at most `maxInFlight` unanswered (the rest are not sent, and counted as
 * `skipped`). Every answer is handed to `onAnswer`.
 */
export async function pace(t: CheckTarget, ratePerSec: () => number, untilMs: number, onAnswer: (c: Checked) => void, maxInFlight = 64): Promise<{ sent: number; skipped: number; errors: number }> {
  const stats = { sent: 0, skipped: 0, errors: 0 };
  const inFlight = new Set<Promise<void>>();
  let owed = 0;
  let last = Date.now();
  while (Date.now() < untilMs) {
    await new Promise((r) => setTimeout(r, 10));
    const now = Date.now();
    owed += (ratePerSec() * (now - last)) / 1000;
    last = now;
    for (; owed >= 1; owed--) {
      if (inFlight.size >= maxInFlight) {
        stats.skipped++;
        continue;
      }
      stats.sent++;
      const p: Promise<void> = checkOnce(t).then(onAnswer, () => void stats.errors++).finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
  }
  await Promise.all(inFlight);
  return stats;
}

/** Open loop at a fixed `ratePerSec` against one server until `untilMs`, tallied as `drive` tallies. */
export async function driveAt(t: CheckTarget, ratePerSec: number, untilMs: number): Promise<Driven> {
  const out: Driven = { admitted: 0, answers: 0, admittedAtMs: [], maxLatencyMs: 0 };
  await pace(t, () => ratePerSec, untilMs, (c) => {
    out.answers++;
    out.maxLatencyMs = Math.max(out.maxLatencyMs, c.atMs - c.sentMs);
    if (c.allowed) {
      out.admitted++;
      out.admittedAtMs.push(c.atMs);
    }
  });
  out.admittedAtMs.sort((x, y) => x - y);
  return out;
}

/** The most of these instants (sorted) inside any span of `spanMs`. */
export function mostInSpan(sortedMs: readonly number[], spanMs: number): number {
  let most = 0;
  for (let lo = 0, hi = 0; hi < sortedMs.length; hi++) {
    while (sortedMs[hi]! - sortedMs[lo]! > spanMs) lo++;
    most = Math.max(most, hi - lo + 1);
  }
  return most;
}

/** /readyz's `replication` (worker/decision/redis-backend.ts). */
export interface Replication {
  status: string;
  lagMs: number | null;
  /** While degraded or other regions are silent: the share of each shared limit enforced, by name. */
  sharesInForce?: Record<string, number>;
  /** Other regions silent too long, with the shares given up for each. */
  silentPeers?: Record<string, { silentForMs: number; sharesGivenUp: Record<string, number> }>;
}

export async function replicationOf(url: string): Promise<Replication> {
  const body = (await (await fetch(`${url}/readyz`)).json()) as { replication?: Replication };
  if (!body.replication) throw new Error(`${url}/readyz has no replication`);
  return body.replication;
}

/** Waits until every server's /readyz replication satisfies `ok`; throws naming `what` after `timeoutMs`. */
export async function waitForReplicationState(urls: readonly string[], what: string, ok: (r: Replication) => boolean, timeoutMs = 15_000): Promise<Replication[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all = await Promise.all(urls.map(replicationOf));
    if (all.every(ok)) return all;
    if (Date.now() > deadline) throw new Error(`replication did not become ${what}: ${JSON.stringify(all)}`);
    await sleep(100);
  }
}

/** Waits until every server's /readyz says this replication status. */
export async function waitForReplication(urls: readonly string[], status: string, timeoutMs = 15_000): Promise<void> {
  await waitForReplicationState(urls, status, (r) => r.status === status, timeoutMs);
}

export type Region = "us" | "eu" | "ap";
export const THREE_REGIONS: readonly Region[] = ["us", "eu", "ap"];

/** Three regions on one machine: us on the run's Redis and NATS itself, eu and ap each on a Redis of its own and behind a latency proxy to NATS. */
export interface ThreeRegions {
  nats: OwnNats;
  proxies: Record<"eu" | "ap", LatencyProxy>;
  redis: Record<Region, Redis>;
  servers: Record<Region, SpawnedServer>;
  url(r: Region): string;
  stop(): Promise<void>;
}

/**
 * Starts three regions with `policy` (and the service token) in every region's Redis as a publish
 * writes it, then (after `seed`, for what else a publish writes) a decision server per region,
 * and waits until every one's replication is ok. `stop()` takes all of it down.
 */
export async function startThreeRegions(o: {
  homeRedisUrl: string;
  prefix: string;
  token: string;
  policy: CompiledFixture;
  linkMs: number;
  env?: Record<string, string>;
  seed?: (redis: Redis) => Promise<void>;
}): Promise<ThreeRegions> {
  const [nats, eu, ap] = await Promise.all([startOwnNats(), startOwnRedis(), startOwnRedis()]);
  const proxies = { eu: await startLatencyProxy({ targetPort: nats.port, latencyMs: o.linkMs }), ap: await startLatencyProxy({ targetPort: nats.port, latencyMs: o.linkMs }) };
  const redisUrl: Record<Region, string> = { us: o.homeRedisUrl, eu: eu.url, ap: ap.url };
  const redis = { us: new Redis(redisUrl.us), eu: new Redis(redisUrl.eu), ap: new Redis(redisUrl.ap) };
  await Promise.all(
    THREE_REGIONS.map(async (r) => {
      await writeFixturePolicy(redis[r], o.policy, [sha256Hex(o.token)]);
      await o.seed?.(redis[r]);
    }),
  );
  const started = await Promise.all(
    THREE_REGIONS.map((r) =>
      spawnRegionServer({ region: r, redisUrl: redisUrl[r], replicationUrl: r === "us" ? nats.url : proxies[r].url("nats"), prefix: o.prefix, token: o.token, env: o.env }),
    ),
  );
  const servers = { us: started[0]!, eu: started[1]!, ap: started[2]! };
  const url = (r: Region) => servers[r].url;
  await waitForReplication(THREE_REGIONS.map(url), "ok");
  return {
    nats,
    proxies,
    redis,
    servers,
    url,
    async stop() {
      await Promise.all(Object.values(servers).map((s) => s.stop()));
      for (const c of Object.values(redis)) c.disconnect();
      await Promise.all(Object.values(proxies).map((p) => p.close()));
      await Promise.all([nats.stop(), eu.stop(), ap.stop()]);
    },
  };
}
