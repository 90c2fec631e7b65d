/**
 * A worker run for the crash tests (rollup.int.test.ts, billing-close.int.test.ts): drains closed
 * minutes (and optionally closes billing periods) and SIGKILLs itself at the step numbered
 * CRASH_AT_STEP (1-based, counting every step hook), to stop exactly between two steps. The test
 * also kills it from outside at random times, which lands anywhere, including mid-transaction.
 */
import { Redis } from "ioredis";
import { createDb } from "../../db/client";
import { closeDuePeriods } from "../billing-close";
import { drainClosedMinutes } from "../rollup";
import { DRAIN_START_MARKER } from "./drain-runner";

const crashAt = Number(process.env.CRASH_AT_STEP ?? "0");
const prefix = process.env.SLUICE_REDIS_PREFIX ?? "";
const nowMs = Number(process.env.NOW_MS ?? Date.now());
let step = 0;

function maybeCrash(): void {
  step++;
  if (crashAt > 0 && step === crashAt) process.kill(process.pid, "SIGKILL");
}

const db = createDb(process.env.DATABASE_URL);
const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", { lazyConnect: false });
try {
  // Tells a test that kills from outside that the work starts now (startup is not "during rollup").
  process.stderr.write(`${DRAIN_START_MARKER}\n`);
  const report = await drainClosedMinutes({ db, redis, prefix, onStep: () => maybeCrash() }, { nowMs });
  let closed: string[] = [];
  if (process.env.CLOSE_BILLING === "1") {
    closed = await closeDuePeriods({ db, onStep: () => maybeCrash() }, { nowMs, graceMs: Number(process.env.BILLING_GRACE_MS ?? "0") });
  }
  process.stdout.write(JSON.stringify({ ...report, closed }) + "\n");
} finally {
  await redis.quit().catch(() => undefined);
  await db.$disconnect();
}
