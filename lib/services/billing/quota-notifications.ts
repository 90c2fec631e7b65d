/**
 * A tenant's quota notifications for the tenant page and `sluice notifications`: the list (status,
 * attempts, last answer) and a re-send, which queues the same event (same bytes, same id) again
 * with a fresh 24 h of retries. Tenancy is in every `where`. A re-send is audited.
 */
import type { PrismaClient } from "../../generated/prisma/client";
import { writeAudit } from "../../db/audit";
import { ServiceError } from "../errors";

/** Automatic retries stop this long after a notification is created (or re-sent). */
export const RETRY_WINDOW_MS = 24 * 3_600_000;

export interface NotificationView {
  id: string;
  quotaId: string;
  period: string;
  kind: string;
  threshold: number;
  used: number;
  limit: number;
  status: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
  nextAttemptAt: string;
}

export async function listTenantNotifications(db: PrismaClient, tenant: string, take = 50): Promise<NotificationView[]> {
  const rows = await db.quotaNotification.findMany({ where: { tenant }, orderBy: [{ createdAt: "desc" }, { threshold: "desc" }], take });
  return rows.map((r) => ({
    id: r.id, quotaId: r.quotaId, period: r.period, kind: r.kind, threshold: r.threshold, used: Number(r.used), limit: Number(r.limit),
    status: r.status, attempts: r.attempts, lastStatus: r.lastStatus, lastError: r.lastError,
    createdAt: r.createdAt.toISOString(), deliveredAt: r.deliveredAt?.toISOString() ?? null, nextAttemptAt: r.nextAttemptAt.toISOString(),
  }));
}

export async function resendNotification(db: PrismaClient, input: { tenant: string; id: string }, actor: string, nowMs: number): Promise<{ id: string }> {
  return db.$transaction(async (tx) => {
    const row = await tx.quotaNotification.findFirst({ where: { id: input.id, tenant: input.tenant } });
    if (!row) throw new ServiceError("not_found", "no such notification", { field: "id" });
    await tx.quotaNotification.update({
      where: { id: row.id },
      data: { status: "pending", nextAttemptAt: new Date(nowMs), retryUntil: new Date(nowMs + RETRY_WINDOW_MS) },
    });
    await writeAudit(tx, {
      actor, action: "notification.resend", entity: "notification", entityId: row.id,
      before: { status: row.status, attempts: row.attempts }, after: { status: "pending", tenant: row.tenant },
    });
    return { id: row.id };
  });
}
