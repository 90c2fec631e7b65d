/**
 * Starts a throwaway `redis-server` from PATH (the demo's default when REDIS_URL is unset).
 * Returns null when there is no redis-server binary: the caller falls back to single-node mode.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { freePort, startChild } from "./processes";

export function hasRedisServer(): boolean {
  return spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
}

export async function startRedisServer(dataDir: string): Promise<{ url: string } | null> {
  if (!hasRedisServer()) return null;
  const port = await freePort(6390);
  fs.mkdirSync(dataDir, { recursive: true });
  startChild("redis", "redis-server", [
    "--port", String(port),
    "--bind", "127.0.0.1",
    "--save", "",
    "--appendonly", "no",
    "--dir", path.resolve(dataDir),
  ], { quiet: true });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 50; i++) {
    const ping = spawnSync("redis-cli", ["-p", String(port), "ping"], { encoding: "utf8" });
    if (ping.stdout?.trim() === "PONG") return { url };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`redis-server on port ${port} did not answer PING`);
}
