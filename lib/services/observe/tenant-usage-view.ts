/**
 * One tenant's limits and quotas with what its counters hold now: the customer portal's data, read
 * from the live policy (Postgres) and the same Redis counters that decide (one MGET: a tenant's
 * counters share its hash tag, so it is one slot on Redis Cluster too). The answer is
 * lib/policy/tenant-usage-answer.ts's, the one `GET /v1/usage` gives, so both show the
 * same numbers. Rate limits show their size and window; what is left of them is per key or per
 * window state the decision server reads with a dry run (`GET /v1/usage`), so it is null here.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { buildUsageAnswer, usageReadPlan, type TenantUsageAnswer } from "../../policy/tenant-usage-answer";
import { redisPrefix } from "../../redis/keys";
import type { RedisLike } from "../../redis/policy";
import { readLivePolicy } from "../policy/draft-view";
import { redisStep, ServiceError } from "../errors";

/** The answer for `tenant` at `nowMs`, or null when the live policy has no such tenant. */
export async function readTenantUsage(deps: { db: PrismaClient; redis: RedisLike | null }, tenant: string, nowMs: number): Promise<TenantUsageAnswer | null> {
  const redis = deps.redis;
  // Single-node mode keeps its counters inside the decision server, out of reach of this process.
  if (!redis) throw new ServiceError("store_unavailable", "the counters are inside the single-node decision server: usage cannot be read in this mode");
  const live = await readLivePolicy(deps.db);
  if (!live) return null;
  const plan = usageReadPlan(live, tenant, nowMs, redisPrefix());
  if (!plan) return null;
  const keys = plan.quotas.flatMap((q) => (q.carriedKey ? [q.counterKey, q.carriedKey] : [q.counterKey]));
  const values = keys.length === 0 ? [] : await redisStep("reading the tenant's counters", () => redis.mget(...keys));
  const counters = new Map(keys.map((k, i) => [k, Number(values[i] ?? 0) || 0]));
  return buildUsageAnswer(live, plan, { counters }, nowMs);
}
