"use client";
import { useState, useTransition } from "react";
import { FIELD_WORDS, inFormTerms } from "./override-messages";
import { plainMessage } from "@/lib/policy/plain-messages";
import type { ActionResult } from "@/lib/errors";
import { useUnsavedChanges } from "./use-unsaved-changes";
import { overrideSchema } from "@/lib/policy/policy-file";
import { ALGORITHMS, OVERAGES, PERIODS, SCOPES } from "@/lib/policy/types";

export interface OverrideDraft {
  operation: string;
  kind: "limit" | "quota";
  scope: string;
  period: string;
  limit: string;
  algorithm: string;
  window: string;
  burst: string;
  overage: string;
  expiresAt: string;
}

export function toPayload(d: OverrideDraft): Record<string, unknown> {
  const o: Record<string, unknown> = { operation: d.operation, limit: d.limit === "" ? undefined : Number(d.limit) };
  if (d.kind === "limit") {
    o.scope = d.scope;
    if (d.algorithm) o.algorithm = d.algorithm;
    if (d.window) o.window = d.window;
    if (d.burst) o.burst = Number(d.burst);
  } else {
    o.period = d.period;
    if (d.overage) o.overage = d.overage;
  }
  // The input is labelled UTC: read it as UTC, whatever the browser's time zone.
  if (d.expiresAt) o.expiresAt = new Date(d.expiresAt.length === 16 ? `${d.expiresAt}:00Z` : d.expiresAt).toISOString();
  return o;
}

const blank: OverrideDraft = { operation: "*", kind: "limit", scope: "api_key", period: "month", limit: "", algorithm: "", window: "", burst: "", overage: "", expiresAt: "" };

function OverrideForm({
  initial,
  operations,
  onSubmit,
  onCancel,
  submitLabel,
}: {
  initial: OverrideDraft;
  operations: string[];
  onSubmit: (d: OverrideDraft) => Promise<ActionResult>;
  onCancel?: () => void;
  submitLabel: string;
}) {
  const [d, setD] = useState(initial);
  const [result, setResult] = useState<ActionResult | null>(null);
  const [saved, setSaved] = useState(initial);
  useUnsavedChanges(JSON.stringify(d) !== JSON.stringify(saved));
  const [pending, start] = useTransition();
  const check = overrideSchema.safeParse(toPayload(d));
  const errors: Record<string, string> = {};
  if (!check.success) for (const i of check.error.issues) errors[String(i.path[0])] ??= plainMessage(i.message);
  if (!result?.ok && result?.issues) for (const i of result.issues) errors[i.path.split(".").pop() ?? ""] ??= inFormTerms(i.message);
  const set = (patch: Partial<OverrideDraft>) => setD((x) => ({ ...x, ...patch }));
  const field = (id: keyof OverrideDraft, label: string, input: React.ReactNode) => (
    <div>
      <label className="label" htmlFor={`ov-${id}`}>
        {label}
      </label>
      {input}
      {errors[id] && d.limit !== "" && <p className="field-error">{errors[id]}</p>}
    </div>
  );
  return (
    <form
      className="card grid grid-cols-2 items-end gap-3 md:grid-cols-4"
      onSubmit={(e) => {
        e.preventDefault();
        start(async () => {
          const r = await onSubmit(d);
          setResult(r);
          if (r.ok) setSaved(onCancel ? d : blank);
          if (r.ok && !onCancel) setD(blank);
        });
      }}
    >
      {field(
        "operation",
        "Operation",
        <select id="ov-operation" className="input" value={d.operation} onChange={(e) => set({ operation: e.target.value })}>
          {["*", ...operations].map((o) => (
            <option key={o}>{o}</option>
          ))}
        </select>,
      )}
      {field(
        "kind",
        "Replaces",
        <select id="ov-kind" className="input" value={d.kind} onChange={(e) => set({ kind: e.target.value as "limit" | "quota" })}>
          <option value="limit">a limit (by scope)</option>
          <option value="quota">a quota (by period)</option>
        </select>,
      )}
      {d.kind === "limit"
        ? field(
            "scope",
            "Scope",
            <select id="ov-scope" className="input" value={d.scope} onChange={(e) => set({ scope: e.target.value })}>
              {SCOPES.map((s) => (
                <option key={s}>{s}</option>
              ))}
            </select>,
          )
        : field(
            "period",
            "Period",
            <select id="ov-period" className="input" value={d.period} onChange={(e) => set({ period: e.target.value })}>
              {PERIODS.map((s) => (
                <option key={s}>{s}</option>
              ))}
            </select>,
          )}
      {field("limit", "Limit", <input id="ov-limit" type="number" min={1} className="input" value={d.limit} onChange={(e) => set({ limit: e.target.value })} aria-invalid={errors.limit && d.limit !== "" ? true : undefined} />)}
      {d.kind === "limit" && (
        <>
          {field(
            "algorithm",
            "Algorithm (default: the tier's)",
            <select id="ov-algorithm" className="input" value={d.algorithm} onChange={(e) => set({ algorithm: e.target.value })}>
              <option value="">same as tier</option>
              {ALGORITHMS.map((a) => (
                <option key={a}>{a}</option>
              ))}
            </select>,
          )}
          {field("window", "Window (default: the tier's)", <input id="ov-window" className="input" placeholder="1m" value={d.window} onChange={(e) => set({ window: e.target.value })} />)}
          {field("burst", "Burst", <input id="ov-burst" type="number" min={1} className="input" value={d.burst} onChange={(e) => set({ burst: e.target.value })} />)}
        </>
      )}
      {d.kind === "quota" &&
        field(
          "overage",
          "Overage",
          <select id="ov-overage" className="input" value={d.overage} onChange={(e) => set({ overage: e.target.value })}>
            <option value="">same as tier</option>
            {OVERAGES.map((o) => (
              <option key={o}>{o}</option>
            ))}
          </select>,
        )}
      {field("expiresAt", "Expires (UTC, optional)", <input id="ov-expiresAt" type="datetime-local" className="input" value={d.expiresAt} onChange={(e) => set({ expiresAt: e.target.value })} />)}
      <div className="col-span-full flex items-center gap-2">
        <button type="submit" className="btn-primary" disabled={pending || d.limit === "" || !check.success}>
          {pending ? "Saving…" : submitLabel}
        </button>
        {onCancel && (
          <button type="button" className="btn" onClick={onCancel}>
            Cancel
          </button>
        )}
        {result && (
          <span role={result.ok ? "status" : "alert"} className={`min-w-0 text-sm break-words ${result.ok ? "text-green-700" : "text-red-600"}`}>
            {result.ok ? result.message : result.issues?.some((i) => (i.path.split(".").pop() ?? "") in FIELD_WORDS) ? "Not saved: see the highlighted field." : inFormTerms(result.message)}
          </span>
        )}
      </div>
    </form>
  );
}

export interface OverrideRow {
  id: string;
  operation: string;
  scope: string | null;
  period: string | null;
  limit: number;
  algorithm: string | null;
  window: string | null;
  burst: number | null;
  overage: string | null;
  expiresAt: string | null;
}

function toDraft(o: OverrideRow): OverrideDraft {
  return {
    operation: o.operation,
    kind: o.scope ? "limit" : "quota",
    scope: o.scope ?? "api_key",
    period: o.period ?? "month",
    limit: String(o.limit),
    algorithm: o.algorithm ?? "",
    window: o.window ?? "",
    burst: o.burst ? String(o.burst) : "",
    overage: o.overage ?? "",
    expiresAt: o.expiresAt ? o.expiresAt.slice(0, 16) : "",
  };
}

export function OverridesEditor({
  slug,
  overrides,
  operations,
  canEdit,
  nowIso,
  save,
}: {
  slug: string;
  overrides: OverrideRow[];
  operations: string[];
  canEdit: boolean;
  nowIso: string;
  save: (input: unknown) => Promise<ActionResult>;
}) {
  const [editing, setEditing] = useState<number | null>(null);
  const [adding, setAdding] = useState(false);
  const [pending, start] = useTransition();
  return (
    <div className="flex flex-col gap-2" data-testid="overrides">
      {overrides.length === 0 && !adding && (
        <p className="rounded-lg border border-dashed border-slate-300 bg-white px-4 py-3 text-sm text-slate-600">
          No override: this tenant gets exactly its tier&apos;s limits. Add one to raise or lower a limit or quota for it alone, optionally until a date.
        </p>
      )}
      {overrides.length > 0 && (
        <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
          <table className="table">
            <thead>
              <tr>
                <th>Operation</th>
                <th>Replaces</th>
                <th className="text-right">Limit</th>
                <th>Details</th>
                <th>Expires</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {overrides.map((o, i) => {
                const expired = o.expiresAt !== null && o.expiresAt <= nowIso;
                return (
                  <tr key={i} className={expired ? "text-slate-400" : undefined}>
                    <td className="font-mono text-xs">{o.operation}</td>
                    <td>{o.scope ? `limit per ${o.scope}` : `quota per ${o.period}`}</td>
                    <td className="text-right tabular-nums">{o.limit.toLocaleString("en-US")}</td>
                    <td className="text-xs">{[o.algorithm, o.window && `window ${o.window}`, o.burst && `burst ${o.burst}`, o.overage && `overage ${o.overage}`].filter(Boolean).join(", ") || "tier defaults"}</td>
                    <td className="whitespace-nowrap text-xs">{o.expiresAt ? `${o.expiresAt.replace("T", " ").slice(0, 16)} UTC${expired ? " (expired)" : ""}` : "never"}</td>
                    <td className="whitespace-nowrap text-right">
                      {canEdit && (
                        <span className="inline-flex gap-1">
                          <button type="button" className="btn" onClick={() => setEditing(i)}>
                            Edit
                          </button>
                          {!expired && (
                            <button
                              type="button"
                              className="btn"
                              disabled={pending}
                              onClick={() =>
                                window.confirm(`Expire this override now? ${slug} goes back to the tier's ${o.scope ? `limit per ${o.scope}` : `quota per ${o.period}`} for ${o.operation} once the draft is published.`) &&
                                start(async () => {
                                  const d = toDraft(o);
                                  await save({ slug, id: o.id, override: { ...toPayload(d), expiresAt: new Date().toISOString() } });
                                })
                              }
                            >
                              Expire now
                            </button>
                          )}
                          <button
                            type="button"
                            className="btn"
                            disabled={pending}
                            onClick={() => {
                              if (window.confirm("Remove this override from the draft?")) start(async () => void (await save({ slug, id: o.id, override: null })));
                            }}
                          >
                            Remove
                          </button>
                        </span>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {editing !== null && overrides[editing] && (
        <OverrideForm
          key={editing}
          initial={toDraft(overrides[editing])}
          operations={operations}
          submitLabel="Save override"
          onCancel={() => setEditing(null)}
          onSubmit={async (d) => {
            const r = await save({ slug, id: overrides[editing].id, override: toPayload(d) });
            if (r.ok) setEditing(null);
            return r;
          }}
        />
      )}
      {canEdit &&
        (adding ? (
          <OverrideForm initial={blank} operations={operations} submitLabel="Add override" onSubmit={(d) => save({ slug, id: null, override: toPayload(d) })} />
        ) : (
          <div>
            <button type="button" className="btn" onClick={() => setAdding(true)}>
              + Add override
            </button>
          </div>
        ))}
    </div>
  );
}
