"use client";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";
import { issueInWords } from "@/lib/policy/plain-messages";

export interface AlertRuleRow {
  kind: string;
  label: string;
  meaning: string;
  /** Percent, as shown and edited. */
  thresholdPercent: number;
  /** Null: the rule has no window (quotas: the month). */
  windowMinutes: number | null;
  webhookUrl: string;
  updated: string | null;
}

/** The form's labels, by the field a refusal names. */
const LABELS = { thresholdPercent: "Threshold", windowMinutes: "Window", webhookUrl: "Webhook URL", kind: "Rule" } as const;

function RuleForm({ rule, canEdit, save }: { rule: AlertRuleRow; canEdit: boolean; save: (input: unknown) => Promise<ActionResult> }) {
  const [threshold, setThreshold] = useState(String(rule.thresholdPercent));
  const [windowMinutes, setWindowMinutes] = useState(rule.windowMinutes === null ? "" : String(rule.windowMinutes));
  const [webhookUrl, setWebhookUrl] = useState(rule.webhookUrl);
  const [result, setResult] = useState<ActionResult | null>(null);
  const [pending, start] = useTransition();
  const issue = (field: string) => (result && !result.ok ? result.issues?.find((i) => i.path === field) : undefined);
  const id = (field: string) => `rule-${rule.kind}-${field}`;
  return (
    <form
      className="card flex flex-col gap-2"
      data-testid={`alert-rule-${rule.kind}`}
      onSubmit={(e) => {
        e.preventDefault();
        start(async () =>
          setResult(
            await save({
              kind: rule.kind,
              thresholdPercent: threshold.trim() === "" ? Number.NaN : Number(threshold),
              windowMinutes: rule.windowMinutes === null ? null : windowMinutes.trim() === "" ? Number.NaN : Number(windowMinutes),
              webhookUrl,
            }),
          ),
        );
      }}
    >
      <div>
        <h3 className="text-sm font-semibold">{rule.label}</h3>
        <p className="text-xs text-slate-600">{rule.meaning}</p>
      </div>
      <div className="flex flex-wrap items-start gap-3">
        <div>
          <label htmlFor={id("threshold")} className="label">
            Threshold (%)
          </label>
          <input id={id("threshold")} className="input w-28" inputMode="decimal" value={threshold} onChange={(e) => setThreshold(e.target.value)} disabled={!canEdit || pending} aria-invalid={issue("thresholdPercent") ? true : undefined} />
          {issue("thresholdPercent") && <p className="field-error">{issue("thresholdPercent")!.message}</p>}
        </div>
        {rule.windowMinutes !== null && (
          <div>
            <label htmlFor={id("window")} className="label">
              Window (minutes)
            </label>
            <input id={id("window")} className="input w-28" inputMode="numeric" value={windowMinutes} onChange={(e) => setWindowMinutes(e.target.value)} disabled={!canEdit || pending} aria-invalid={issue("windowMinutes") ? true : undefined} />
            {issue("windowMinutes") && <p className="field-error">{issue("windowMinutes")!.message}</p>}
          </div>
        )}
        <div className="min-w-0 flex-1 basis-64">
          <label htmlFor={id("webhook")} className="label">
            Notify (webhook URL; empty: the worker&apos;s)
          </label>
          <input id={id("webhook")} className="input w-full" value={webhookUrl} onChange={(e) => setWebhookUrl(e.target.value)} disabled={!canEdit || pending} placeholder="https://hooks.example.com/sluice" aria-invalid={issue("webhookUrl") ? true : undefined} />
          {issue("webhookUrl") && <p className="field-error">{issue("webhookUrl")!.message}</p>}
        </div>
      </div>
      <div className="flex flex-wrap items-center gap-3">
        {canEdit && (
          <button type="submit" className="btn-primary" disabled={pending}>
            {pending ? "Saving…" : "Save rule"}
          </button>
        )}
        <span className="text-xs text-slate-500">{rule.updated ?? "Default (never edited)."}</span>
      </div>
      {result && (
        <p role={result.ok ? "status" : "alert"} className={`text-sm ${result.ok ? "text-green-700" : "text-red-600"}`}>
          {result.ok ? result.message : result.issues?.length ? `Not saved. ${result.issues.map((i) => issueInWords(i, LABELS)).join("; ")}.` : result.message}
        </p>
      )}
    </form>
  );
}

/** The alert rules the worker judges by, one form each; read-only for roles that may not act on alerts. */
export function AlertRulesEditor({ rules, canEdit, save }: { rules: AlertRuleRow[]; canEdit: boolean; save: (input: unknown) => Promise<ActionResult> }) {
  return (
    <div className="grid grid-cols-1 gap-3 lg:grid-cols-3" data-testid="alert-rules">
      {rules.map((r) => (
        <RuleForm key={r.kind} rule={r} canEdit={canEdit} save={save} />
      ))}
    </div>
  );
}
