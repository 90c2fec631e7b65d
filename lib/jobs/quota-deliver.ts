/**
 * Quota threshold notifications, step 2 of 2: deliver the pending rows lib/jobs/quota-notify.ts
 * created, as signed webhooks (lib/services/billing/quota-webhook.ts) to the tenant's endpoint, else the
 * operator's. Retried with backoff (30 s, doubling, at most an hour apart) until 24 h after the
 * row was created or re-sent; then `failed`. Every attempt is counted on the row (status,
 * attempts, last HTTP status or error), which the tenant page shows.
 *
 * Several workers: a worker claims due rows (FOR UPDATE SKIP LOCKED) and moves their next attempt
 * a lease ahead before it sends, so no two workers send the same row at once; a worker that dies
 * after sending and before recording it leaves the lease to expire, and the row is sent again with
 * the same event id (receivers deduplicate on it: docs/billing-periods.md).
 */
import type { Db } from "../db/client";
import { pgTs } from "../db/usage-repo";
import { sendSignedEvent } from "../services/billing/quota-webhook";
import type { Resolver } from "../services/observe/alert-webhook";
import { OPERATOR_SCOPE } from "../services/billing/webhook-endpoints";

/** How long a claimed row is left to its worker before another may send it. */
export const CLAIM_LEASE_MS = 60_000;

/** The wait after the n-th failed attempt (n ≥ 1): 30 s, 1 min, 2 min, … at most 1 h. */
export function backoffMs(attempts: number): number {
  return Math.min(3_600_000, 30_000 * 2 ** Math.max(0, Math.min(attempts - 1, 20)));
}

interface Claimed {
  id: string;
  tenant: string;
  event: string;
  attempts: number;
  retryUntil: Date;
}

async function claim(db: Db, nowMs: number, limit: number): Promise<Claimed[]> {
  return db.$queryRawUnsafe<Claimed[]>(
    `UPDATE "QuotaNotification" SET "nextAttemptAt" = $2::timestamp(3), "attempts" = "attempts" + 1
      WHERE "id" IN (SELECT "id" FROM "QuotaNotification"
                      WHERE "status" = 'pending' AND "nextAttemptAt" <= $1::timestamp(3)
                      ORDER BY "nextAttemptAt", "id" LIMIT $3 FOR UPDATE SKIP LOCKED)
      RETURNING "id", "tenant", "event", "attempts", "retryUntil"`,
    pgTs(nowMs),
    pgTs(nowMs + CLAIM_LEASE_MS),
    limit,
  );
}

export interface DeliveryOptions {
  nowMs: number;
  allowPrivate: boolean;
  /** Rows per pass. */
  limit?: number;
  resolve?: Resolver;
  timeoutMs?: number;
}

/** One pass: sends every due row once; returns what happened. */
export async function deliverDueNotifications(db: Db, options: DeliveryOptions): Promise<{ delivered: number; retrying: number; failed: number }> {
  const { nowMs } = options;
  const rows = await claim(db, nowMs, options.limit ?? 100);
  const endpoints = new Map((await db.webhookEndpoint.findMany()).map((e) => [e.scope, e]));
  const counts = { delivered: 0, retrying: 0, failed: 0 };
  for (const row of rows) {
    const endpoint = endpoints.get(row.tenant) ?? endpoints.get(OPERATOR_SCOPE);
    const eventId = (JSON.parse(row.event) as { id: string }).id;
    const result = endpoint
      ? await sendSignedEvent(endpoint, row.event, eventId, { allowPrivate: options.allowPrivate, nowSeconds: () => Math.floor(Date.now() / 1000), resolve: options.resolve, timeoutMs: options.timeoutMs })
      : { ok: false, status: null, error: "no webhook endpoint for the tenant or the operator" };
    const doneAtMs = Math.max(nowMs, Date.now());
    if (result.ok) {
      counts.delivered++;
      await db.quotaNotification.update({ where: { id: row.id }, data: { status: "delivered", deliveredAt: new Date(doneAtMs), lastStatus: result.status, lastError: null, endpointId: endpoint!.id } });
      continue;
    }
    const next = doneAtMs + backoffMs(row.attempts);
    const giveUp = next > row.retryUntil.getTime();
    if (giveUp) counts.failed++;
    else counts.retrying++;
    await db.quotaNotification.update({
      where: { id: row.id },
      data: { status: giveUp ? "failed" : "pending", nextAttemptAt: new Date(next), lastStatus: result.status, lastError: result.error, endpointId: endpoint?.id ?? null },
    });
  }
  return counts;
}
