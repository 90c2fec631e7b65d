/**
 * `npm run bench:redis-cost` — what one decision costs Redis. For each algorithm, and for the demo
 * policy's four counters in one decision, INFO commandstats and INFO cpu are read before and after
 * 100,000 decisions (1,000 subjects, 64 in flight, auto-pipelined), giving:
 * - commands per decision: DECIDE calls the client sent (FCALL; EVALSHA and EVAL where DECIDE runs as scripts); goal 1;
 * - script µs per decision: the `usec` Redis accounts to those calls (the script and every command
 *   it runs inside); goal ≤ 20;
 * - server CPU µs per decision: used_cpu_user + used_cpu_sys, network I/O included.
 * Runs against its own redis-server on a free port (so nobody else's traffic is counted), or
 * against BENCH_REDIS_URL=… (then other clients' traffic adds to the figures; keys `bench<pid>:*`
 * expire with their windows, nothing is flushed).
 */
import { Redis } from "ioredis";
import { type OwnRedis, startOwnRedis } from "../lib/processes/redis-server";
import { createRedisStore } from "../lib/store/redis";
import type { LimitCheck } from "../lib/store/types";

const DECISIONS = Number(process.env.DECISIONS ?? 100_000);
const IN_FLIGHT = 64;
const SUBJECTS = 1_000;

/** One decision's checks (one limit, or the demo shape's four). */
type Variant = { name: string; checks: Omit<LimitCheck, "key">[] };

const base = { kind: "limit" as const, limit: 1_000, windowMs: 60_000, burst: 1_000, precision: 1, mode: "reject" as const, maxDelayMs: 0, leaseTtlMs: 30_000 };
const slidingWindow = { ...base, algorithm: "sliding_window_counter" as const };
const fixedWindow = { ...base, algorithm: "fixed_window" as const };
const tokenBucket = { ...base, algorithm: "token_bucket" as const };
const monthQuota = { ...base, algorithm: "quota" as const, kind: "quota" as const, period: "month" as const, overage: "block" as const, limit: 1_000_000 };
const VARIANTS: Variant[] = [
  { name: "sliding_window_counter (precision 1)", checks: [slidingWindow] },
  { name: "sliding_window_counter (precision 10)", checks: [{ ...slidingWindow, precision: 10 }] },
  { name: "fixed_window", checks: [fixedWindow] },
  { name: "token_bucket", checks: [tokenBucket] },
  { name: "leaky_bucket (delay)", checks: [{ ...base, algorithm: "leaky_bucket", mode: "delay", maxDelayMs: 500 }] },
  { name: "sliding_window_log (limit 100)", checks: [{ ...base, algorithm: "sliding_window_log", limit: 100 }] },
  { name: "concurrency", checks: [{ ...base, algorithm: "concurrency", limit: 100, leaseTtlMs: 1_000 }] },
  { name: "quota (month)", checks: [monthQuota] },
  // The demo policy's shape (docs/benchmarks.md): four counters in one decision.
  { name: "four counters: sliding window + token bucket + fixed window + month quota", checks: [slidingWindow, tokenBucket, fixedWindow, monthQuota] },
];

interface Stats {
  calls: number;
  usec: number;
  cpuUs: number;
}

async function stats(redis: Redis): Promise<Stats> {
  const info = await redis.info("commandstats");
  let calls = 0;
  let usec = 0;
  for (const m of info.matchAll(/^cmdstat_(fcall|evalsha|eval):calls=(\d+),usec=(\d+)/gm)) {
    calls += Number(m[2]);
    usec += Number(m[3]);
  }
  const cpu = await redis.info("cpu");
  const num = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, "m").exec(cpu)?.[1] ?? 0);
  return { calls, usec, cpuUs: (num("used_cpu_user") + num("used_cpu_sys")) * 1e6 };
}

async function main(): Promise<void> {
  let server: OwnRedis | undefined;
  const url = process.env.BENCH_REDIS_URL ?? (server = await startOwnRedis()).url;
  const redis = new Redis(url, { enableAutoPipelining: true, maxRetriesPerRequest: 1 });
  const statsClient = new Redis(url);
  const store = createRedisStore(redis);
  const rows: string[] = [];
  try {
    const only = process.env.ONLY; // e.g. ONLY=fixed_window: rows whose name contains it
    for (const variant of VARIANTS.filter((v) => !only || v.name.includes(only))) {
      const decisions = Array.from({ length: SUBJECTS }, (_, i) =>
        variant.checks.map((c, j): LimitCheck => ({ ...c, key: `bench${process.pid}:{t:t${i % 50}}:c${j}:${c.algorithm}${c.precision}:${i}` })),
      );
      await store.check(decisions[0]!, { cost: 1, dryRun: false }); // load the script
      const before = await stats(statsClient);
      const started = process.hrtime.bigint();
      let next = 0;
      let allowed = 0;
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < DECISIONS) {
            const n = next++;
            if ((await store.check(decisions[n % SUBJECTS]!, { cost: 1, dryRun: false })).allowed) allowed++;
          }
        }),
      );
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const after = await stats(statsClient);
      rows.push(
        `| ${variant.name} | ${((after.calls - before.calls) / DECISIONS).toFixed(2)} | ${((after.usec - before.usec) / DECISIONS).toFixed(1)} | ${((after.cpuUs - before.cpuUs) / DECISIONS).toFixed(1)} | ${Math.round(DECISIONS / seconds)} | ${((100 * allowed) / DECISIONS).toFixed(0)}% |`,
      );
    }
  } finally {
    redis.disconnect();
    statsClient.disconnect();
  }
  // Calibration on this (shared, noisy) machine: the cheapest possible scripts, measured the same way.
  for (const [name, source] of [
    ["baseline: EVALSHA `return 1`", "return 1"],
    ["baseline: EVALSHA INCRBY + PEXPIRE", "local v = redis.call('INCRBY', KEYS[1], 1) redis.call('PEXPIRE', KEYS[1], 60000) return v"],
  ] as const) {
    const client = new Redis(url, { enableAutoPipelining: true, maxRetriesPerRequest: 1 });
    const stat = new Redis(url);
    const sha = String(await client.script("LOAD", source));
    const before = await stats(stat);
    const started = process.hrtime.bigint();
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < DECISIONS) {
          const n = next++;
          await client.evalsha(sha, 1, `bench${process.pid}:{t:b}:${n % SUBJECTS}`);
        }
      }),
    );
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const after = await stats(stat);
    rows.push(
      `| ${name} | ${((after.calls - before.calls) / DECISIONS).toFixed(2)} | ${((after.usec - before.usec) / DECISIONS).toFixed(1)} | ${((after.cpuUs - before.cpuUs) / DECISIONS).toFixed(1)} | ${Math.round(DECISIONS / seconds)} | — |`,
    );
    client.disconnect();
    stat.disconnect();
  }
  await server?.stop();
  console.log(`## Redis cost per decision (${DECISIONS.toLocaleString("en")} decisions per row, ${SUBJECTS} subjects, ${IN_FLIGHT} in flight)\n`);
  console.log("| algorithm | commands / decision | script µs / decision (commandstats) | server CPU µs / decision | decisions/s (one client) | allowed |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const row of rows) console.log(row);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
