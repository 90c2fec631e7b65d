/** What the load benches share: Redis's own CPU, and how a bench ends. */
import type { Redis } from "ioredis";

/** CPU Redis has spent in commands so far (µs, the sum of INFO commandstats usec): read before and after a run. */
export async function redisUsec(redis: Redis): Promise<number> {
  let total = 0;
  for (const m of (await redis.info("commandstats")).matchAll(/usec=(\d+)/g)) total += Number(m[1]);
  return total;
}

/** Runs a bench's `main` and exits: 0 when it resolves (a handle left open must not keep it running), 1 with the stack when it throws. */
export function runBench(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
}
