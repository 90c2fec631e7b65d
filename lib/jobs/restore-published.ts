/**
 * Refills a Redis that lost what the control plane published (issue #17, defect 1;
 * docs/failure-modes.md "Recovery: Redis back empty"): a restart without persistence, a failover to an empty replica. Without it every
 * decision server answered 401 to every caller until someone published again.
 *
 * The worker probes every second (readPublishedState: `policy:current` and the PUBLISHED_MARKER of
 * the key index and the service-token set, three small reads). When anything is missing it takes
 * the policy lock (the one publish holds, so no publish interleaves), probes again, and writes back
 * the latest PolicyVersion, the key index and the service tokens from Postgres with the same MULTI
 * publish uses (writePublishedPolicy, which PUBLISHes the version, so decision servers re-read at
 * once). No new version is created and nothing is audited: it is the same published state.
 *
 * Quota counters: when `policy:current` itself is gone, Redis lost its data, and with it this
 * day's and month's quota counters (a tenant's own billing periods for one anchored elsewhere than
 * the UTC calendar). Each is raised to at least what Postgres counted (QuotaUsage.used of the
 * current period, under the counter's label) by one script per counter, never lowered, so a counter
 * that survived (a partial loss on Cluster) or that decisions re-created since the restart is
 * never counted twice. What is lost, said in docs/failure-modes.md: usage not yet rolled up into Postgres
 * (Redis held it: up to about two minutes), decisions counted on a re-created counter before the
 * restore when they are fewer than Postgres's count (they are folded into the maximum, not added),
 * and units above one per decision (QuotaUsage counts decisions). Rate-limit windows, buckets and
 * concurrency leases start empty.
 */
import type { Db } from "../db/client";
import { latestPolicyVersion, listKeyIndexEntries, listServiceTokenHashes, listTenantTokenHashes, lockPolicy } from "../db/policy-repo";
import { parseCompiledPolicy } from "../policy/compiled-schema";
import { billingPeriod } from "../policy/billing-period";
import type { CompiledPolicyBody } from "../policy/compiled";
import { quotaPeriod } from "../policy/quota-period";
import { PERIODS } from "../policy/types";
import type { RedisClient } from "../redis/client";
import { keys } from "../redis/keys";
import { missingParts, readPublishedState, writePublishedPolicy } from "../redis/policy";

/** How often the worker probes (ms): the detection part of the recovery bound. */
export const RESTORE_CHECK_MS = 1_000;

/** Raises a quota counter to at least ARGV[1], expiring at ARGV[2] (ms since the epoch); returns what it added. */
const RAISE_QUOTA = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local floor = tonumber(ARGV[1])
if current >= floor then return 0 end
redis.call('SET', KEYS[1], floor, 'PXAT', ARGV[2])
return floor - current
`;

export type MissingPartName = ReturnType<typeof missingParts>[number];

export interface RestoreResult {
  /** What the probe found missing (empty: nothing to do). */
  missing: MissingPartName[];
  /** The version written back, or null when nothing was written. */
  restoredVersion: number | null;
  keys: number;
  serviceTokens: number;
  /** Quota counters raised to Postgres's count, and the units added. */
  quotaCounters: number;
  quotaUnits: number;
}

const NOTHING = { restoredVersion: null, keys: 0, serviceTokens: 0, quotaCounters: 0, quotaUnits: 0 } as const;

/**
 * The periods whose QuotaUsage rows refill counters, by label: the UTC day and month, and each
 * tenant's own current periods where its billing differs (the labels its counters carry: the
 * rollup writes a row under them too).
 */
function currentPeriods(doc: CompiledPolicyBody, nowMs: number): Map<string, { endMs: number }> {
  const periods = new Map<string, { endMs: number }>();
  for (const p of [quotaPeriod(nowMs, "month"), quotaPeriod(nowMs, "day")]) periods.set(p.label, p);
  for (const t of Object.values(doc.tenants)) {
    if (!t.billing && !t.billingChange) continue;
    for (const period of PERIODS) {
      const p = billingPeriod(nowMs, period, t.billing ?? null, t.billingChange);
      periods.set(p.label, p);
    }
  }
  return periods;
}

async function raiseQuotaCounters(db: Db, redis: RedisClient, nowMs: number, doc: CompiledPolicyBody): Promise<{ counters: number; units: number }> {
  const periods = currentPeriods(doc, nowMs);
  const rows = await db.quotaUsage.findMany({
    where: { period: { in: [...periods.keys()] }, used: { gt: 0 } },
    select: { tenant: true, quotaId: true, period: true, used: true },
  });
  let counters = 0;
  let units = 0;
  for (const row of rows) {
    const period = periods.get(row.period)!;
    const added = Number(await redis.eval(RAISE_QUOTA, 1, `${keys.quota(row.tenant, row.quotaId)}:${row.period}`, String(row.used), String(period.endMs)));
    if (added > 0) {
      counters++;
      units += added;
    }
  }
  return { counters, units };
}

/** One probe, and a restore when something is missing. Throws when Redis or Postgres fails (the next probe retries). */
export async function restorePublishedState(
  { db, redis }: { db: Db; redis: RedisClient },
  { nowMs }: { nowMs: number },
): Promise<RestoreResult> {
  const missing = missingParts(await readPublishedState(redis));
  if (missing.length === 0) return { missing, ...NOTHING };
  return db.$transaction(
    async (tx) => {
      await lockPolicy(tx);
      // Another worker, or a publish, may have written it while this one waited for the lock.
      const still = missingParts(await readPublishedState(redis));
      if (still.length === 0) return { missing, ...NOTHING };
      const latest = await latestPolicyVersion(tx);
      if (!latest) return { missing, ...NOTHING }; // nothing was ever published: nothing to restore
      const stored = parseCompiledPolicy(latest.document);
      if (!stored.ok) throw new Error(`stored policy v${latest.version} does not validate; cannot restore it`);
      // Counters first: if this worker dies before the policy is back, the next probe does it all
      // again, and raising is idempotent.
      const quotas = still.includes("policy") ? await raiseQuotaCounters(db, redis, nowMs, stored.value) : { counters: 0, units: 0 };
      const keyIndex = await listKeyIndexEntries(tx);
      const serviceTokens = await listServiceTokenHashes(tx);
      await writePublishedPolicy(redis, stored.value, { keyIndex, serviceTokens, tenantTokens: await listTenantTokenHashes(tx) });
      return {
        missing: still,
        restoredVersion: latest.version,
        keys: keyIndex.length,
        serviceTokens: serviceTokens.length,
        quotaCounters: quotas.counters,
        quotaUnits: quotas.units,
      };
    },
    { maxWait: 10_000, timeout: 60_000 },
  );
}
