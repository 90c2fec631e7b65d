/**
 * The ioredis client every process uses: standalone from REDIS_URL, or a Cluster when
 * REDIS_CLUSTER_NODES (`host:port,host:port,…`) is set. Fails fast on purpose (docs/pitfalls.md):
 * commands time out after REDIS_TIMEOUT_MS (tens of ms, not seconds), a command is retried at
 * most once on reconnect (scripts are never retried by the store itself; see lib/store/redis.ts),
 * and reconnection backs off up to 1 s. Auto-pipelining batches the decision scripts of
 * concurrent requests into one write per event-loop tick.
 */
import { Cluster, Redis, type ClusterNode, type RedisOptions } from "ioredis";

export interface RedisClientOptions {
  /** redis://host:port[/db]; ignored when clusterNodes is given. */
  url?: string;
  /** `host:port,host:port,…`: connect to a Redis Cluster through these seed nodes. */
  clusterNodes?: string;
  /** Per-command timeout in ms (default 25, REDIS_TIMEOUT_MS). */
  commandTimeoutMs?: number;
  /** Connection name shown by CLIENT LIST. */
  name?: string;
}

export type RedisClient = Redis | Cluster;

/** NOSCRIPT: the script was not loaded (a restart, a failover, SCRIPT FLUSH), so nothing ran. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("NOSCRIPT");
}

export function parseClusterNodes(text: string): ClusterNode[] {
  return text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((hostPort) => {
      const match = /^(.+):(\d{1,5})$/.exec(hostPort);
      if (!match) throw new Error(`REDIS_CLUSTER_NODES: expected host:port, got ${JSON.stringify(hostPort)}`);
      return { host: match[1], port: Number(match[2]) };
    });
}

function commonOptions(o: RedisClientOptions): RedisOptions {
  return {
    commandTimeout: o.commandTimeoutMs ?? 25,
    connectTimeout: 2_000,
    maxRetriesPerRequest: 1,
    enableAutoPipelining: true,
    connectionName: o.name,
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 5), 1_000),
  };
}

/** A client from explicit options (tests, scripts). Listen for "error" yourself if you care. */
export function createRedisClient(o: RedisClientOptions): RedisClient {
  let client: RedisClient;
  if (o.clusterNodes) {
    client = new Cluster(parseClusterNodes(o.clusterNodes), {
      redisOptions: commonOptions(o),
      enableAutoPipelining: true,
      scaleReads: "master",
      clusterRetryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 5), 1_000),
      slotsRefreshTimeout: 2_000,
    });
  } else {
    client = new Redis(o.url ?? "redis://127.0.0.1:6379", commonOptions(o));
  }
  // Without a listener an unreachable Redis would crash the process; callers add their own too.
  client.on("error", () => undefined);
  return client;
}

/** A client from the environment (REDIS_CLUSTER_NODES, REDIS_URL, REDIS_TIMEOUT_MS). */
export async function createRedisFromEnv(name?: string): Promise<RedisClient> {
  const { env } = await import("../env");
  const e = env();
  return createRedisClient({
    url: e.REDIS_URL,
    clusterNodes: e.REDIS_CLUSTER_NODES,
    commandTimeoutMs: e.REDIS_TIMEOUT_MS,
    name,
  });
}
