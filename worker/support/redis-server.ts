/**
 * Starts a throwaway `redis-server` from PATH (the demo's default when REDIS_URL is unset), under the
 * demo's supervision (its output prefixed, stopped with the demo).
 * Returns null when there is no redis-server binary: the caller falls back to single-node mode.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { freePort } from "../../lib/net/ports";
import { redisServerArgs, waitForRedis } from "../../lib/processes/redis-server";
import { startChild } from "./processes";

export function hasRedisServer(): boolean {
  return spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
}

export async function startRedisServer(dataDir: string): Promise<{ url: string } | null> {
  if (!hasRedisServer()) return null;
  const port = await freePort(6390);
  fs.mkdirSync(dataDir, { recursive: true });
  startChild("redis", "redis-server", redisServerArgs(port, path.resolve(dataDir)), { quiet: true });
  await waitForRedis(port, 5_000);
  return { url: `redis://127.0.0.1:${port}` };
}
