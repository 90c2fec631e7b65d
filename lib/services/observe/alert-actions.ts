/**
 * Acknowledge and silence alerts (the Dashboards page; docs/observability-and-billing.md, "Alerts"). Both are
 * audit entries and nothing else: the audit log is the record of who took an alert and who muted
 * which subject until when, and the alert list reads its state from there.
 *
 * - acknowledge: "someone is on it", on one alert event (`alert.acknowledge`, entity `alert`, the
 *   alert's id);
 * - silence: no webhook delivery for the alert's kind and subject (the tenant, tier, quota…) until
 *   the given time, also for the alerts that reopen on it meanwhile (`alert.silence`, the alert's id,
 *   after `{kind, subject, until}`). The alert still opens and resolves and is shown as silenced.
 *
 * Needs dashboards.read (sre, admin): the people an alert pages.
 */
import { z } from "zod";
import type { Db } from "../../db/client";
import { listAlerts } from "../../db/alert-repo";
import { writeAudit } from "../../db/audit";
import { can } from "../../auth/permissions";
import type { Editor } from "../policy/edit-policy";
import { ServiceError } from "../errors";

export const SILENCE_MAX_MINUTES = 7 * 24 * 60;

const ackInput = z.strictObject({ id: z.string().min(1).max(64), note: z.string().trim().max(500).optional() });
const silenceInput = z.strictObject({
  id: z.string().min(1).max(64),
  minutes: z.number("expected a number of minutes").int("expected whole minutes").min(5, "expected at least 5 minutes").max(SILENCE_MAX_MINUTES, "expected at most 7 days"),
  note: z.string().trim().max(500).optional(),
});

function parse<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue.path.map(String).join(".") || "body";
    throw new ServiceError("invalid_request", `${field}: ${issue.message}`, { field });
  }
  return parsed.data;
}

async function findAlert(db: Db, id: string) {
  const alert = await db.alertEvent.findUnique({ where: { id } });
  if (!alert) throw new ServiceError("not_found", `no alert ${id}`, { field: "id" });
  return alert;
}

function guard(editor: Editor): void {
  if (!can(editor.role, "dashboards.read")) throw new ServiceError("forbidden", `the ${editor.role} role may not acknowledge or silence alerts`);
}

/** The one write of both actions: their audit entry, on the alert's id. */
async function auditAlert(db: Db, editor: Editor, action: string, alert: { id: string; kind: string; subject: string }, after: Record<string, unknown>): Promise<void> {
  await db.$transaction(async (tx) => {
    await writeAudit(tx, { actor: editor.actor, action, entity: "alert", entityId: alert.id, before: null, after: { kind: alert.kind, subject: alert.subject, ...after } });
  });
}

export async function acknowledgeAlert(db: Db, raw: unknown, editor: Editor, nowMs = Date.now()): Promise<{ id: string; acknowledgedAt: string }> {
  const input = parse(ackInput, raw);
  guard(editor);
  const alert = await findAlert(db, input.id);
  const at = new Date(nowMs);
  await auditAlert(db, editor, "alert.acknowledge", alert, { message: alert.message, note: input.note ?? null });
  return { id: alert.id, acknowledgedAt: at.toISOString() };
}

export async function silenceAlert(db: Db, raw: unknown, editor: Editor, nowMs = Date.now()): Promise<{ id: string; until: string }> {
  const input = parse(silenceInput, raw);
  guard(editor);
  const alert = await findAlert(db, input.id);
  const until = new Date(nowMs + input.minutes * 60_000).toISOString();
  await auditAlert(db, editor, "alert.silence", alert, { until, note: input.note ?? null });
  return { id: alert.id, until };
}

export interface AlertState {
  acknowledgedBy: string | null;
  acknowledgedAt: Date | null;
  /** Silenced (its kind and subject) until then; null when not silenced now. */
  silencedUntil: Date | null;
  silencedBy: string | null;
}

const afterSchema = z.object({ kind: z.string(), subject: z.string(), until: z.string().optional() });

/** The silences in force at `nowMs`, by `<kind>|<subject>`. */
export async function activeSilences(db: Db, nowMs: number): Promise<Map<string, { until: Date; by: string }>> {
  const rows = await db.auditEntry.findMany({
    where: { entity: "alert", action: "alert.silence", at: { gte: new Date(nowMs - SILENCE_MAX_MINUTES * 60_000) } },
    orderBy: { at: "asc" },
  });
  const out = new Map<string, { until: Date; by: string }>();
  for (const r of rows) {
    const after = afterSchema.safeParse(r.after);
    if (!after.success || !after.data.until) continue;
    const until = new Date(after.data.until);
    if (until.getTime() > nowMs) out.set(`${after.data.kind}|${after.data.subject}`, { until, by: r.actor });
  }
  return out;
}

/** Acknowledgement and silence of each alert, read from the audit log. */
export async function alertStates(db: Db, alerts: readonly { id: string; kind: string; subject: string }[], nowMs: number): Promise<Map<string, AlertState>> {
  const acks = alerts.length
    ? await db.auditEntry.findMany({ where: { entity: "alert", action: "alert.acknowledge", entityId: { in: alerts.map((a) => a.id) } }, orderBy: { at: "asc" } })
    : [];
  const silences = await activeSilences(db, nowMs);
  const out = new Map<string, AlertState>();
  for (const a of alerts) {
    const ack = acks.filter((r) => r.entityId === a.id).at(-1);
    const silence = silences.get(`${a.kind}|${a.subject}`);
    out.set(a.id, { acknowledgedBy: ack?.actor ?? null, acknowledgedAt: ack?.at ?? null, silencedUntil: silence?.until ?? null, silencedBy: silence?.by ?? null });
  }
  return out;
}

/** The alerts since `sinceMs` (open ones whenever they began) with their acknowledgement and silence. */
export async function listAlertsWithState(db: Db, { sinceMs, nowMs, limit = 20 }: { sinceMs: number; nowMs: number; limit?: number }) {
  const alerts = await listAlerts(db, { sinceMs, limit });
  const states = await alertStates(db, alerts, nowMs);
  return alerts.map((a) => ({ ...a, ...states.get(a.id) }));
}
