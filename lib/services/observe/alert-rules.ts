/**
 * The alert rules the worker judges by (lib/jobs/alerts.ts), edited on the Dashboards page: per rule
 * a threshold, the window it is judged over, and the webhook its alerts go to (none: the worker's
 * ALERT_WEBHOOK_URL). A rule without a row in AlertRule has its default, so a fresh install alerts
 * as before rules were editable. Saving needs dashboards.read (sre, admin: the people an alert
 * pages), checks the webhook with the alert webhook's SSRF rules, and is audited (`alert_rule.update`).
 */
import { z } from "zod";
import type { Db } from "../../db/client";
import { writeAudit } from "../../db/audit";
import { can } from "../../auth/permissions";
import { assertDeliverable } from "./alert-webhook";
import type { Editor } from "../policy/edit-policy";
import { ServiceError } from "../errors";

export const ALERT_RULE_KINDS = ["deny_share", "quota", "redis_errors"] as const;
export type AlertRuleKind = (typeof ALERT_RULE_KINDS)[number];

export interface AlertRule {
  kind: AlertRuleKind;
  /** A share in (0, 1]: what each rule's `thresholdMeaning` says. */
  threshold: number;
  /** The window the rule is judged over (minutes); null for quotas (their period is the month). */
  windowMinutes: number | null;
  /** Where this rule's alerts are POSTed; null: the worker's ALERT_WEBHOOK_URL. */
  webhookUrl: string | null;
  updatedBy: string | null;
  updatedAt: Date | null;
}

/** Each rule's default, its bounds, and what its threshold means, in words (the page shows them). */
export const ALERT_RULE_SPECS: Record<AlertRuleKind, { label: string; threshold: number; windowMinutes: number | null; minPercent: number; thresholdMeaning: string }> = {
  deny_share: {
    label: "429 share of a tenant or tier",
    threshold: 0.05,
    windowMinutes: 5,
    minPercent: 0.1,
    thresholdMeaning: "fires when the window's 429 share is above this, above twice its baseline (the hour before) and 10 points above it, with at least 20 decisions",
  },
  quota: {
    label: "Monthly quota used",
    threshold: 0.8,
    windowMinutes: null,
    minPercent: 1,
    thresholdMeaning: "fires when a tenant has used this share of a monthly quota (and again at 100 %)",
  },
  redis_errors: {
    label: "Redis errors and timeouts",
    threshold: 0.01,
    windowMinutes: 5,
    minPercent: 0.01,
    thresholdMeaning: "fires when store errors and timeouts reach this share of decisions in the window, or the breaker opens",
  },
};

export const MAX_ALERT_WINDOW_MINUTES = 60;

export function defaultAlertRules(): Record<AlertRuleKind, AlertRule> {
  return Object.fromEntries(
    ALERT_RULE_KINDS.map((kind) => [kind, { kind, threshold: ALERT_RULE_SPECS[kind].threshold, windowMinutes: ALERT_RULE_SPECS[kind].windowMinutes, webhookUrl: null, updatedBy: null, updatedAt: null }]),
  ) as Record<AlertRuleKind, AlertRule>;
}

/** Every rule: its saved row, or its default. */
export async function readAlertRules(db: Db): Promise<Record<AlertRuleKind, AlertRule>> {
  const rules = defaultAlertRules();
  for (const row of await db.alertRule.findMany()) {
    const kind = ALERT_RULE_KINDS.find((k) => k === row.kind);
    if (!kind) continue;
    rules[kind] = { kind, threshold: row.threshold, windowMinutes: ALERT_RULE_SPECS[kind].windowMinutes === null ? null : row.windowMinutes, webhookUrl: row.webhookUrl, updatedBy: row.updatedBy, updatedAt: row.updatedAt };
  }
  return rules;
}

const ruleInput = z
  .strictObject({
    kind: z.enum(ALERT_RULE_KINDS, "expected deny_share, quota or redis_errors"),
    thresholdPercent: z.number("expected a percentage").max(100, "expected at most 100 %"),
    windowMinutes: z.number("expected a number of minutes").int("expected whole minutes").min(1, "expected at least 1 minute").max(MAX_ALERT_WINDOW_MINUTES, "expected at most 60 minutes").nullable(),
    webhookUrl: z.string().trim().max(2000, "expected at most 2,000 characters"),
  })
  .superRefine((v, ctx) => {
    const spec = ALERT_RULE_SPECS[v.kind];
    if (v.thresholdPercent < spec.minPercent) ctx.addIssue({ code: "custom", path: ["thresholdPercent"], message: `expected at least ${spec.minPercent} %` });
    if (spec.windowMinutes === null && v.windowMinutes !== null) ctx.addIssue({ code: "custom", path: ["windowMinutes"], message: "a quota rule has no window (its period is the month)" });
    if (spec.windowMinutes !== null && v.windowMinutes === null) ctx.addIssue({ code: "custom", path: ["windowMinutes"], message: "expected a number of minutes" });
  });

/** A refused field: the message names it; the issue carries the reason alone, for the form to put under it. */
function refused(field: string, reason: string): ServiceError {
  return new ServiceError("invalid_request", `${field}: ${reason}`, { field, issues: [{ path: field, message: reason }] });
}

export async function saveAlertRule(db: Db, raw: unknown, editor: Editor, options: { allowPrivateWebhooks: boolean }): Promise<AlertRule> {
  if (!can(editor.role, "dashboards.read")) throw new ServiceError("forbidden", `the ${editor.role} role may not edit alert rules`);
  const parsed = ruleInput.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw refused(issue.path.map(String).join(".") || "body", issue.message);
  }
  const { kind, thresholdPercent, windowMinutes } = parsed.data;
  const webhookUrl = parsed.data.webhookUrl === "" ? null : parsed.data.webhookUrl;
  if (webhookUrl !== null) {
    if (!URL.canParse(webhookUrl)) throw refused("webhookUrl", "expected a URL such as https://hooks.example.com/sluice");
    try {
      await assertDeliverable(webhookUrl, options.allowPrivateWebhooks);
    } catch (error) {
      throw refused("webhookUrl", error instanceof Error ? error.message : String(error));
    }
  }
  const threshold = thresholdPercent / 100;
  const before = (await readAlertRules(db))[kind];
  const row = await db.$transaction(async (tx) => {
    const saved = await tx.alertRule.upsert({
      where: { kind },
      create: { kind, threshold, windowMinutes: windowMinutes ?? 0, webhookUrl, updatedBy: editor.actor },
      update: { threshold, windowMinutes: windowMinutes ?? 0, webhookUrl, updatedBy: editor.actor },
    });
    await writeAudit(tx, {
      actor: editor.actor,
      action: "alert_rule.update",
      entity: "alert_rule",
      entityId: kind,
      before: { threshold: before.threshold, windowMinutes: before.windowMinutes, webhookUrl: before.webhookUrl },
      after: { threshold, windowMinutes, webhookUrl },
    });
    return saved;
  });
  return { kind, threshold: row.threshold, windowMinutes, webhookUrl: row.webhookUrl, updatedBy: row.updatedBy, updatedAt: row.updatedAt };
}
