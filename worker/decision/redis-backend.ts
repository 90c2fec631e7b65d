/**
 * The Redis backend (SLUICE_MODE=redis, the default): policy, key index and service tokens
 * followed from Redis (PUBLISH + poll), counters in the Redis store (Lua), usage aggregated in
 * process and flushed to Redis every second. Any number of replicas share one Redis (or Cluster).
 * With several regions (SLUICE_REGION) it also follows the shares of `split` limits and enforces
 * this region's share (lib/redis/region-shares.ts, docs/regions.md), and with SLUICE_REPLICATION_URL
 * it sends what `shared` limits admit to the other regions and applies theirs (./replication.ts).
 */
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { PolicySource } from "../../lib/redis/policy-source";
import { parseClusterNodes, type RedisClient } from "../../lib/redis/client";
import { KeyIndex } from "../../lib/redis/key-index";
import { RegionSharesFollower } from "../../lib/redis/region-shares";
import { recordServiceTokensUsed, tenantOfToken } from "../../lib/redis/policy";
import { UsageRecorder } from "../../lib/redis/usage";
import { createRedisStore } from "../../lib/store/redis";
import { createRedisEnvoyCounters } from "../../lib/envoy/redis-store";
import { withReplication } from "../../lib/regions/replication";
import { redisPrefix } from "../../lib/redis/keys";
import type { CompiledPolicy } from "../../lib/policy/compiled";
import { sharedLimitNames, type DegradedShares } from "../../lib/policy/region-shares";
import type { Backend, BackendContext } from "./backend";
import type { DecisionServerOptions } from "./options";
import { type ReplicationLink, startReplication } from "./replication";

/** The longest a decision with a budget waits while Redis keeps answering (lib/store/redis/deadline.ts). */
const maxWaitMs = (redisTimeoutMs: number) => Math.max(redisTimeoutMs * 40, 1_000);
/**
 * The main connection's command timeout: only a hang guard for commands nothing else bounds
 * (policy and key-index reads, the usage flush), which retry on their own. Decisions have their
 * budgets. A tight one here cost more than it saved: at 100 ms (4 × the 25 ms budget, as it was)
 * and even at 1 s, a busy machine timed out policy reads after a publish and a server stayed on
 * the old version past the 5 s poll (policy-distribution.int.test.ts with the default budget).
 */
const COMMAND_TIMEOUT_MS = 10_000;

function createRedis(options: DecisionServerOptions, role: "main" | "subscriber"): RedisClient {
  const common: RedisOptions = {
    // Decision path: fail fast instead of queueing while disconnected; reconnect with short backoff.
    enableOfflineQueue: role === "subscriber",
    maxRetriesPerRequest: role === "subscriber" ? null : 0,
    // No auto-pipelining: the Redis store already sends the decisions of one event-loop turn as
    // one call; ioredis's own batching would hold that call for another turn and cost more CPU
    // than it saves (measured: 8.0–9.1k → 11.4–15.1k single checks/s, bench/profile-run.mts).
    enableAutoPipelining: false,
    // Only a hang guard: the decision path's budgets are the store's own deadlines, judged after
    // the reply had its chance to be read (lib/net/timeout.ts). ioredis's timer is not: it fires
    // before the I/O phase, so a decision server busy for longer than it turned replies already
    // in the socket into errors (#17 defect 9).
    commandTimeout: role === "main" ? COMMAND_TIMEOUT_MS : undefined,
    retryStrategy: (times) => Math.min(50 * times, 500),
    connectTimeout: 2_000,
    lazyConnect: false,
  };
  if (options.clusterNodes) {
    return new Cluster(parseClusterNodes(options.clusterNodes), {
      redisOptions: common,
      enableOfflineQueue: common.enableOfflineQueue,
      enableAutoPipelining: common.enableAutoPipelining,
      clusterRetryStrategy: (times) => Math.min(100 * times, 1_000),
    });
  }
  return new Redis(options.redisUrl ?? "redis://127.0.0.1:6379", common);
}

/** Whether any limit or global cap of the document is `regions: shared` (a tenant's override inherits its limit's). */
function hasSharedLimits(doc: CompiledPolicy | null): boolean {
  if (doc === null) return false;
  return Object.values(doc.tiers).some((t) => t.limits.some((l) => l.regions === "shared")) || doc.globalCaps.some((g) => g.regions === "shared");
}

/** Shares by limit name, rounded to 4 places (a limit with no measured share: `otherwise`). */
function sharesByName(shares: DegradedShares, names: ReadonlyMap<string, string>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [id, name] of names) out[name] = Math.round((shares.ratios.get(id) ?? shares.otherwise) * 10_000) / 10_000;
  return out;
}

/**
 * /readyz's `replication` (docs/regions.md): the link's status and lag; while it is degraded, or
 * other regions are silent, the share of each shared limit this region enforces (`sharesInForce`, by
 * limit name); the silent regions (`silentPeers`: for how long, and the shares given up for each);
 * without SLUICE_REPLICATION_URL,
 * `unconfigured` once the policy has a shared limit (still ready: the limit then counts this
 * region's traffic only, as with a cut link, and taking every server of the region out of
 * rotation for it would turn a looser limit into an outage).
 */
function replicationReadiness(link: ReplicationLink | null, doc: CompiledPolicy | null): Record<string, unknown> {
  if (link) {
    const { status, lagMs, sharesInForce, silentPeers } = link.status();
    if (!doc) return { replication: { status, lagMs } };
    const names = sharedLimitNames(doc);
    const silent = Object.fromEntries(silentPeers.map((p) => [p.region, { silentForMs: p.silentForMs, sharesGivenUp: sharesByName(p.shares, names) }]));
    return { replication: { status, lagMs, ...(sharesInForce && { sharesInForce: sharesByName(sharesInForce, names) }), ...(silentPeers.length > 0 && { silentPeers: silent }) } };
  }
  if (!hasSharedLimits(doc)) return {};
  return { replication: { status: "unconfigured", lagMs: null, error: "the policy has shared limits but SLUICE_REPLICATION_URL is not set: they count this region's traffic only" } };
}

export function redisBackend(ctx: BackendContext): Backend {
  const { options, log, breaker } = ctx;
  if (options.replicationUrl && !options.region) throw new Error("SLUICE_REPLICATION_URL needs SLUICE_REGION: a region's batches are named by it, and its own are skipped by it");
  const redis = createRedis(options, "main");
  const subscriber = createRedis(options, "subscriber");
  redis.on("error", () => undefined);
  subscriber.on("error", () => undefined);
  // Reconnected: probe the store now instead of waiting out the breaker's open period.
  redis.on("ready", () => breaker.probeNow());
  const keyIndex = new KeyIndex(redis);
  const usage = new UsageRecorder(redis);
  const policy = new PolicySource({
    redis,
    subscriber,
    pollMs: options.pollMs,
    log,
    onPolicy: (doc, previous) => {
      if (previous) {
        // Cached keys keep answering and are re-read in the background (no miss storm per publish).
        keyIndex.markStale();
        void keyIndex.warm().catch(() => undefined);
      }
      ctx.policyLoaded(doc);
      if (!options.replicationUrl && hasSharedLimits(doc)) log(`policy v${doc.version} has shared limits but SLUICE_REPLICATION_URL is not set: they count this region's traffic only (docs/regions.md)`);
    },
    onKeyRevoked: (hash) => keyIndex.evict(hash),
    // Messages (revocations) may have been missed: every cached key is re-read in the background,
    // and keeps answering meanwhile — a key resolved before an outage stays resolvable through it.
    onResubscribed: () => {
      keyIndex.markStale();
      void keyIndex.warm().catch(() => undefined);
    },
    onServiceTokens: (hashes) => ctx.serviceTokens(hashes),
    onRollout: (split) => ctx.rolloutLoaded?.(split && { id: split.id, step: split.step, candidateVersion: split.candidate.version, cohortSize: split.cohort.size }),
  });
  const shares = new RegionSharesFollower({ redis, region: options.region, onChange: () => ctx.sharesChanged(), log });
  const replication = options.replicationUrl
    ? startReplication({
        url: options.replicationUrl,
        region: options.region!,
        redis,
        prefix: redisPrefix(),
        log,
        registry: ctx.registry,
        regions: () => shares.regions,
        silentMs: options.replicationSilentMs,
        onDegradedShares: (degraded) => shares.setDegraded(degraded),
      })
    : null;
  const ownStore = options.store ?? createRedisStore(redis, { maxWaitMs: maxWaitMs(options.redisTimeoutMs) });
  const store = replication ? withReplication(ownStore, replication.outbox) : ownStore;
  return {
    policy,
    // The published document (or a rollout's, for its cohort) with this region's share of every
    // `split` limit, and of every `shared` one while the replication link is degraded.
    currentPolicy: () => shares.apply(policy.current),
    policyFor: (tenant) => shares.apply(policy.forTenant(tenant)),
    keyIndex,
    store,
    envoyCounters: options.envoyCounters ?? createRedisEnvoyCounters(redis),
    usage,
    tenantUsage: {
      tenantOfToken: (tokenHash) => tenantOfToken(redis, tokenHash),
      async readCounters(keys) {
        // One MGET: a tenant's counters share its hash tag, one slot on a cluster too.
        const values = await redis.mget(...keys);
        return new Map(keys.map((k, i) => [k, Number(values[i] ?? 0) || 0]));
      },
    },
    async start() {
      // The decision path never queues commands while disconnected, so wait (briefly) for the
      // connection before the first policy read; if Redis is down, polling keeps trying.
      if (redis.status !== "ready") {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 5_000);
          t.unref();
          redis.once("ready", () => {
            clearTimeout(t);
            resolve();
          });
        });
      }
      await policy.start();
      await shares.start();
      // Small key indexes are loaded whole before the first request (bounded wait; lookups still work
      // one by one if it fails or is too large).
      await Promise.race([keyIndex.warm().catch(() => 0), new Promise((r) => setTimeout(r, 2_000).unref())]);
    },
    readiness() {
      const doc = policy.current;
      const redisUp = redis.status === "ready";
      const ready = doc !== null && redisUp;
      // `missing`: what Redis lost of the published state (policy, keyIndex, serviceTokens) while
      // the last good copies in memory keep answering; empty once the worker restored it. Still
      // ready: every replica sees the same Redis, and taking them all out of rotation would turn a
      // degraded service into none.
      const split = shares.status;
      const regionShares = split.kind === "none" ? {} : { regionShares: split.kind === "ok" ? "ok" : `this region is not among the shares' regions (${split.regions.join(", ")}): enforcing the least share` };
      return { ready, body: { ready, policyVersion: doc?.version ?? null, redis: redisUp, breaker: breaker.state, missing: policy.missing, ...regionShares, ...replicationReadiness(replication, doc) } };
    },
    flushUsage: () => usage.flush(),
    recordTokenUse: (hashes, atMs) => recordServiceTokensUsed(redis, hashes, atMs),
    async close() {
      policy.stop();
      shares.stop();
      await replication?.close();
      await usage.flush().catch(() => undefined);
      await store.close().catch(() => undefined);
      redis.disconnect();
      subscriber.disconnect();
    },
  };
}
