import { AlertRulesEditor } from "@/components/alert-rules-editor";
import { formatTime, Section } from "@/components/ui";
import { can } from "@/lib/auth/permissions";
import type { Principal } from "@/lib/auth/require-role";
import { db } from "@/lib/db/client";
import { env } from "@/lib/env";
import { ALERT_RULE_KINDS, ALERT_RULE_SPECS, readAlertRules } from "@/lib/services/observe/alert-rules";
import { saveAlertRuleAction } from "../_lib/alert-actions";

/** The alert rules (editable by the roles that act on alerts) and the decision servers' /metrics. */
export async function AlertRulesSection({ principal }: { principal: Principal }) {
  const rules = await readAlertRules(db());
  const metricsUrl = env().SLUICE_METRICS_URL;
  return (
    <Section
      title="Alert rules"
      description="What the worker alerts on, judged every minute over the drained rollups; each rule's alerts go to its webhook, else to the worker's ALERT_WEBHOOK_URL. Changes are audited."
      actions={
        <p className="text-sm" data-testid="metrics-link">
          {metricsUrl ? (
            <a href={metricsUrl} className="text-indigo-700 hover:underline" target="_blank" rel="noreferrer">
              Decision server metrics (Prometheus) ↗
            </a>
          ) : (
            <span className="text-slate-500">Set SLUICE_METRICS_URL to link the decision servers&apos; /metrics here.</span>
          )}
        </p>
      }
    >
      <AlertRulesEditor
        canEdit={can(principal.role, "dashboards.read")}
        save={saveAlertRuleAction}
        rules={ALERT_RULE_KINDS.map((kind) => {
          const r = rules[kind];
          return {
            kind,
            label: ALERT_RULE_SPECS[kind].label,
            meaning: ALERT_RULE_SPECS[kind].thresholdMeaning,
            thresholdPercent: +(r.threshold * 100).toFixed(4),
            windowMinutes: r.windowMinutes,
            webhookUrl: r.webhookUrl ?? "",
            updated: r.updatedBy && r.updatedAt ? `Edited by ${r.updatedBy}, ${formatTime(r.updatedAt)}.` : null,
          };
        })}
      />
    </Section>
  );
}
