/**
 * Alerts as the Dashboards, the Overview and the alert actions list them: every open alert, and
 * those that started since `sinceMs`, newest first. The worker's alert job (lib/jobs/alerts.ts)
 * opens and resolves them.
 */
import type { Db } from "./client";

export async function listAlerts(db: Db, { sinceMs, limit = 100 }: { sinceMs: number; limit?: number }) {
  return db.alertEvent.findMany({
    where: { OR: [{ resolvedAt: null }, { startedAt: { gte: new Date(sinceMs) } }] },
    orderBy: [{ startedAt: "desc" }, { id: "asc" }],
    take: limit,
  });
}
