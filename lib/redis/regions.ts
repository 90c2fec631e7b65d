/**
 * Several regions (docs/regions.md): each region has its own Redis and decision servers, and the
 * control plane, the worker and the CLI write what they publish to every region's Redis
 * (SLUICE_REGIONS=`<name>=<redis url>,…`). This module holds the clients of those Redis servers,
 * one per region for the life of the process, and the one way to write to all of them:
 * `writeToRegions`, which runs the same write on each region at once, each bounded by
 * REGION_WRITE_TIMEOUT_MS, and reports which regions took it. A region that cannot be reached
 * keeps its last good copy; the worker brings it up to date (lib/jobs/region-sync.ts).
 *
 * Without SLUICE_REGIONS there is one target, the caller's own client (REDIS_URL), named
 * DEFAULT_REGION: every write behaves as it did before regions existed.
 */
import { currentEnv, type RegionConfig } from "../env";
import { createRedisClient, type RedisClient } from "./client";

/** The name of the one target when SLUICE_REGIONS is unset. */
export const DEFAULT_REGION = "default";

/**
 * How long one region's write may take before it counts as missed. Generous (a publish carries the
 * whole key index) but bounded: a region across an ocean, or one that is down, never holds a publish
 * for longer than this; the worker catches it up later.
 */
export const REGION_WRITE_TIMEOUT_MS = 5_000;

export interface RegionTarget {
  name: string;
  redis: RedisClient;
}

const clients = new Map<string, RedisClient>();

function regionClient(region: RegionConfig): RedisClient {
  const key = `${region.name}=${region.redisUrl}`;
  let client = clients.get(key);
  if (!client) {
    client = createRedisClient({ url: region.redisUrl, commandTimeoutMs: REGION_WRITE_TIMEOUT_MS, name: `sluice-region-${region.name}` });
    clients.set(key, client);
  }
  return client;
}

/** The regions of SLUICE_REGIONS as read now (empty when unset). */
export function configuredRegions(): RegionConfig[] {
  return currentEnv("SLUICE_REGIONS");
}

/** Where published state goes: every region's Redis, or `home` alone without SLUICE_REGIONS. */
export function regionTargets(home: RedisClient): RegionTarget[] {
  const regions = configuredRegions();
  if (regions.length === 0) return [{ name: DEFAULT_REGION, redis: home }];
  return regions.map((r) => ({ name: r.name, redis: regionClient(r) }));
}

/** Closes the region clients this process opened (the CLI and the worker at exit; tests). */
export async function closeRegionClients(): Promise<void> {
  const open = [...clients.values()];
  clients.clear();
  for (const client of open) client.disconnect();
}

export interface RegionWriteOutcome {
  /** Regions whose Redis took the write. */
  reached: string[];
  /** Regions that did not (down, unreachable, too slow), each with the reason. */
  missed: { region: string; error: Error }[];
}

/** `promise`, or a rejection naming the region after `ms` (a region that does not answer never holds its caller longer). */
export function withTimeout<T>(promise: Promise<T>, region: string, ms = REGION_WRITE_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`region ${region}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Runs `write` on every target at once; never throws, reports who took it. */
export async function writeToRegions(
  targets: RegionTarget[],
  write: (redis: RedisClient) => Promise<unknown>,
  timeoutMs = REGION_WRITE_TIMEOUT_MS,
): Promise<RegionWriteOutcome> {
  const results = await Promise.allSettled(targets.map((t) => withTimeout(write(t.redis), t.name, timeoutMs)));
  const outcome: RegionWriteOutcome = { reached: [], missed: [] };
  results.forEach((r, i) => {
    const region = targets[i]!.name;
    if (r.status === "fulfilled") outcome.reached.push(region);
    else outcome.missed.push({ region, error: r.reason instanceof Error ? r.reason : new Error(String(r.reason)) });
  });
  return outcome;
}
