/**
 * A worker for the quota notification crash test (quota-notify.int.test.ts): one detection pass and
 * one delivery pass at NOW_MS, then exit. The test SIGKILLs it while its webhook request is in flight.
 */
import { Redis } from "ioredis";
import { createDb } from "../../db/client";
import { deliverDueNotifications } from "../quota-deliver";
import { detectQuotaNotifications } from "../quota-notify";

const nowMs = Number(process.env.NOW_MS ?? Date.now());
const db = createDb(process.env.DATABASE_URL);
const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
try {
  await detectQuotaNotifications({ db, redis, prefix: process.env.SLUICE_REDIS_PREFIX ?? "" }, { nowMs });
  await deliverDueNotifications(db, { nowMs, allowPrivate: true, timeoutMs: 60_000 });
} finally {
  await redis.quit().catch(() => undefined);
  await db.$disconnect();
}
