/**
 * The process-wide clients route handlers use. The control plane's Redis client gets a generous
 * command timeout (a publish MULTI carries the whole key index), unlike the decision path's 25 ms.
 */
import { db } from "../db/client";
import { currentEnv, sluiceMode } from "../env";
import { createRedisClient, type RedisClient } from "../redis/client";

const globalForRedis = globalThis as unknown as { sluiceControlRedis?: { key: string; client: RedisClient } };

export const CONTROL_PLANE_REDIS_TIMEOUT_MS = 5_000;

/**
 * The Redis client, or null in single-node mode (SLUICE_MODE=single-node): there is no Redis, and
 * every service taking it (publish, rollback, keys, tokens) then writes Postgres only, which the
 * single-node decision server polls.
 */
export function controlPlaneRedis(): RedisClient | null {
  if (sluiceMode() === "single-node") return null;
  const url = currentEnv("REDIS_URL");
  const clusterNodes = currentEnv("REDIS_CLUSTER_NODES");
  if (!url && !clusterNodes) throw new Error("REDIS_URL is not set (npm run demo starts a redis-server and sets it)");
  const key = `${url ?? ""}|${clusterNodes ?? ""}`;
  const cached = globalForRedis.sluiceControlRedis;
  if (cached && cached.key === key) return cached.client;
  const client = createRedisClient({ url, clusterNodes, commandTimeoutMs: CONTROL_PLANE_REDIS_TIMEOUT_MS, name: "sluice-control-plane" });
  globalForRedis.sluiceControlRedis = { key, client };
  return client;
}

export { db };
