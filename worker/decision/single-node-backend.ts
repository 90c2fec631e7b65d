/**
 * The single-node backend (SLUICE_MODE=single-node, docs/architecture.md "Modes"): no Redis at all. Policy, API
 * keys and service tokens are polled from Postgres, counters live in process (quota counters
 * seeded from QuotaUsage at start, each in its tenant's own period; GET /v1/usage reads them), usage aggregates are written to Postgres by the rollup's own
 * code (lib/single-node/). Exactly one replica: refuses to start without a database, with one that
 * is not migrated, or while another single-node decision server holds the advisory lock.
 */
import { createDb } from "../../lib/db/client";
import { markTokensUsed } from "../../lib/db/token-use";
import { checkSingleNodeEnv, SingleNodeConfigError } from "../../lib/single-node/config";
import { acquireInstanceLock } from "../../lib/single-node/instance-lock";
import { PostgresKeyIndex } from "../../lib/single-node/postgres-key-index";
import { PostgresPolicySource } from "../../lib/single-node/postgres-policy-source";
import { PostgresUsageSink } from "../../lib/single-node/postgres-usage-sink";
import { seedQuotaCounters } from "../../lib/single-node/seed-quotas";
import { messageOf, withQueryTimeout } from "../../lib/single-node/timeout";
import { createMemoryStore } from "../../lib/store/memory";
import { createMemoryEnvoyCounters } from "../../lib/envoy/memory-store";
import type { Backend, BackendContext } from "./backend";

/** Single-node: how often Postgres is asked for a new policy version, key changes and service tokens. */
export const SINGLE_NODE_POLL_MS = 500;

export async function singleNodeBackend(ctx: BackendContext): Promise<Backend> {
  const { options, log, logger } = ctx;
  const { problems } = checkSingleNodeEnv({
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: undefined,
    REDIS_CLUSTER_NODES: options.clusterNodes,
    SLUICE_INSTANCES: options.instances,
  });
  if (problems.length > 0) throw new SingleNodeConfigError(problems);
  const databaseUrl = options.databaseUrl!;
  const db = createDb(databaseUrl);
  try {
    await withQueryTimeout(db.$queryRawUnsafe(`SELECT 1 FROM "PolicyVersion" LIMIT 1`), "checking the database");
  } catch (error) {
    await db.$disconnect().catch(() => undefined);
    throw new Error(`single-node: cannot read the PolicyVersion table at DATABASE_URL (${messageOf(error)}); is PostgreSQL up and migrated (npm run db:migrate)?`);
  }
  let lock: Awaited<ReturnType<typeof acquireInstanceLock>>;
  try {
    lock = await acquireInstanceLock(databaseUrl, log);
  } catch (error) {
    await db.$disconnect().catch(() => undefined);
    throw error;
  }
  const pollMs = options.changePollMs ?? SINGLE_NODE_POLL_MS;
  /** sha256(tenant read token) → tenant, as of the last poll: a revocation counts within a poll. */
  let tenantTokens = new Map<string, string>();
  const keyIndex = new PostgresKeyIndex({ db, pollMs, log });
  const usage = new PostgresUsageSink({ db, log });
  const policy = new PostgresPolicySource({
    db,
    pollMs,
    log,
    onPolicy: (doc) => ctx.policyLoaded(doc),
    onServiceTokens: (hashes) => ctx.serviceTokens(hashes),
    onTenantTokens: (tenantOf) => (tenantTokens = tenantOf),
  });
  // A store passed in (tests) has no in-process quota counters to read for GET /v1/usage.
  const memory = options.store ? null : createMemoryStore();
  const store = options.store ?? memory!;
  const release = async () => {
    policy.stop();
    keyIndex.stop();
    await lock.release();
    await db.$disconnect().catch(() => undefined);
  };
  return {
    policy,
    // Not ready (503 not_ready) until the keys are loaded too: an unloaded index must not mean "unknown key" nor "fail open".
    currentPolicy: () => (keyIndex.loaded ? policy.current : null),
    keyIndex,
    store,
    envoyCounters: options.envoyCounters ?? createMemoryEnvoyCounters(),
    usage,
    // GET /v1/usage: tenant tokens polled from Postgres with the service tokens, counters from the in-process store.
    tenantUsage: memory
      ? {
          tenantOfToken: async (tokenHash) => tenantTokens.get(tokenHash) ?? null,
          readCounters: async (keys) => memory.readQuotaCounters(keys),
        }
      : null,
    async start() {
      await Promise.all([policy.start(), keyIndex.start()]);
      try {
        // Quota counters are in process: seed this day's and month's from Postgres, or a restart would hand out fresh quotas.
        const seeded = await seedQuotaCounters(db, store, { nowMs: Date.now(), doc: policy.current });
        logger.info(`single-node mode: no Redis; counters in process; ${seeded.counters} quota counters seeded from QuotaUsage`);
      } catch (error) {
        await release();
        throw new Error(`single-node: seeding quota counters from QuotaUsage failed: ${messageOf(error)}`);
      }
    },
    readiness() {
      const doc = policy.current;
      const ready = doc !== null && keyIndex.loaded;
      return { ready, body: { ready, policyVersion: doc?.version ?? null, mode: "single-node", keysLoaded: keyIndex.loaded, postgres: policy.postgresOk } };
    },
    flushUsage: () => usage.flush(),
    recordTokenUse: (hashes, atMs) => withQueryTimeout(markTokensUsed(db, hashes, new Date(atMs)), "recording service tokens' last use"),
    async close() {
      policy.stop();
      keyIndex.stop();
      await usage.close().catch(() => undefined);
      await store.close().catch(() => undefined);
      await release();
    },
  };
}
