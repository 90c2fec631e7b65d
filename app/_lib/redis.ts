/**
 * The control plane's Redis client (publish, rollback, key index updates). Control-plane writes are
 * rare and carry whole documents, so they get a longer command timeout than the decision path.
 */
import { env } from "@/lib/env";
import { createRedisClient, type RedisClient } from "@/lib/redis/client";

const CONTROL_PLANE_REDIS_TIMEOUT_MS = 3_000;
const g = globalThis as unknown as { sluiceAppRedis?: RedisClient };

export function appRedis(): RedisClient {
  if (!g.sluiceAppRedis) {
    const e = env();
    g.sluiceAppRedis = createRedisClient({
      url: e.REDIS_URL,
      clusterNodes: e.REDIS_CLUSTER_NODES,
      commandTimeoutMs: CONTROL_PLANE_REDIS_TIMEOUT_MS,
      name: "sluice-control-plane",
    });
  }
  return g.sluiceAppRedis;
}
