// Cost of one check through the Redis store (sliding_window_counter, 100k keys, 50 at a time):
// Redis time per check (commandstats usec) and the Node process's CPU per check.
import { Redis } from "ioredis";
import { startOwnRedis } from "../lib/processes/redis-server";
import { createRedisStore } from "../lib/store/redis";
import type { LimitCheck } from "../lib/store/types";
const own = await startOwnRedis();
const redis = new Redis(own.url, { enableAutoPipelining: true });
const store = createRedisStore(redis);
const check = (i: number): LimitCheck => ({ key: `b:{t:bench}:c:l1:${i.toString(16)}`, kind: "limit", algorithm: "sliding_window_counter", limit: 1_000_000_000, windowMs: 60_000, burst: 1_000_000_000, precision: 1, mode: "reject", maxDelayMs: 0, leaseTtlMs: 0 });
const N = Number(process.env.N ?? 30_000);
await store.check([check(0)], { cost: 1, dryRun: false });
for (let round = 0; round < 2; round++) {
  await redis.config("RESETSTAT");
  const t = performance.now();
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < N; i += 50) await Promise.all(Array.from({ length: 50 }, () => store.check([check(Math.floor(Math.random() * 100_000))], { cost: 1, dryRun: false })));
  const wall = performance.now() - t;
  const cpu = process.cpuUsage(cpu0);
  const info = await redis.info("commandstats");
  const stat = (cmd: string) => Number(/usec=(\d+)/.exec(info.split("\n").find((l) => l.startsWith(`cmdstat_${cmd}:`)) ?? "usec=0")![1]);
  const inner = ["time", "hmget", "hincrby", "hkeys", "hdel", "pexpire", "hlen"].reduce((s, c) => s + stat(c), 0);
  console.log(`round ${round}: evalsha ${(stat("evalsha") / N).toFixed(2)} µs/call (inner commands ${(inner / N).toFixed(2)}), ${(N / (wall / 1000)).toFixed(0)} checks/s, node ${((cpu.user + cpu.system) / N).toFixed(1)} µs CPU/check`);
  console.log(info.split("\n").filter((l) => l.startsWith("cmdstat") && !l.includes("config")).map((l) => l.replace(/,rejected.*/, "")).join("\n"));
}
redis.disconnect();
await own.stop();
process.exit(0);
