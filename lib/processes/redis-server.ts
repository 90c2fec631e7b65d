/**
 * Throwaway `redis-server` processes (from PATH): the demo's default Redis, and the own servers of
 * tests and benchmarks that must not disturb the shared one (SCRIPT FLUSH, a kill, a cluster).
 * No persistence; every process this module spawned is killed when this process exits (./own-server.ts).
 */
import type { ChildProcess } from "node:child_process";
import { type OwnServer, spawnOwned, startOwnServer, waitForGreeting } from "./own-server";

/** The command line of a throwaway server: loopback only, nothing saved, files in `dir`. */
export function redisServerArgs(port: number, dir: string, extra: readonly string[] = []): string[] {
  return ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...extra];
}

const PONG = { send: "PING\r\n", startsWith: "+PONG" };

/** Resolves once the server on `port` answers PING; throws after `timeoutMs`. */
export function waitForRedis(port: number, timeoutMs = 10_000): Promise<void> {
  return waitForGreeting(port, PONG, timeoutMs);
}

/** Spawns a throwaway server (output ignored); the caller waits for it with waitForRedis. */
export function spawnRedisServer(port: number, dir: string, extra: readonly string[] = []): ChildProcess {
  return spawnOwned("redis-server", redisServerArgs(port, dir, extra));
}

/** kill() is Redis crashing: start() brings it back on the same port, empty (nothing is saved). */
export type OwnRedis = OwnServer;

/** A throwaway redis-server on a free port, in a temporary directory; restartable on the same port. */
export function startOwnRedis(): Promise<OwnRedis> {
  return startOwnServer({ name: "redis", spawn: spawnRedisServer, greeting: PONG });
}
