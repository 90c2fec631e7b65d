/**
 * The ioredis client of the control plane, the worker, the CLI and the tools: standalone from
 * REDIS_URL, or a Cluster when REDIS_CLUSTER_NODES (`host:port,host:port,…`) is set. A command
 * times out after `commandTimeoutMs` (each caller passes its own: seconds for the worker and the
 * CLI, CONTROL_PLANE_REDIS_TIMEOUT_MS for the admin API), is retried at most once on reconnect,
 * and reconnection backs off up to 1 s. Auto-pipelining sends the commands of one event-loop tick
 * as one write.
 *
 * The decision server does not use it: worker/decision/redis-backend.ts builds its clients without
 * auto-pipelining (the Redis store already sends one DECIDE call per event-loop turn,
 * lib/store/redis/) and with a hang guard instead of a tight command timeout (the store budget
 * is the store's own deadline, docs/failure-modes.md).
 */
import { Cluster, Redis, type ClusterNode, type RedisOptions } from "ioredis";

export interface RedisClientOptions {
  /** redis://host:port[/db]; ignored when clusterNodes is given. */
  url?: string;
  /** `host:port,host:port,…`: connect to a Redis Cluster through these seed nodes. */
  clusterNodes?: string;
  /** Per-command timeout in ms (default 25). */
  commandTimeoutMs?: number;
  /** Connection name shown by CLIENT LIST. */
  name?: string;
}

export type RedisClient = Redis | Cluster;

/** NOSCRIPT: the script was not loaded (a restart, a failover, SCRIPT FLUSH), so nothing ran. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("NOSCRIPT");
}

/** A Redis Function that is not loaded on that node (a new or restarted node, FUNCTION FLUSH), or a Redis without FCALL: nothing ran. */
export function isFunctionMissing(error: unknown): boolean {
  return error instanceof Error && (error.message.startsWith("ERR Function not found") || /unknown command .fcall/i.test(error.message));
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

