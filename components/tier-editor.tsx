"use client";
/**
 * The limit matrix editor: operations × scopes, each cell one or more limits. Every edit is
 * validated with the policy file's own zod schemas (lib/policy/policy-file.ts) as you type, and
 * the server validates again on save. Saving changes the draft; publishing is on the Policy page.
 */
import { useRouter } from "next/navigation";
import { useEffect, useMemo, useRef, useState, useTransition } from "react";
import { useUnsavedChanges } from "./use-unsaved-changes";
import { limitSchema, quotaSchema, tierSchema } from "@/lib/policy/policy-file";
import { ALGORITHMS, MODES, OVERAGES, PERIODS, SCOPES } from "@/lib/policy/types";
import type { ActionResult } from "@/lib/errors";
import { describeLimit, describeQuota, type LimitDraft } from "./limit-sentence";
import { plainMessage } from "@/lib/policy/plain-messages";
import { limitLabel } from "@/lib/policy/labels";
import { parseDurationMs } from "@/lib/policy/duration";

export interface QuotaDraft {
  operation: string;
  period: string;
  limit?: number;
  overage: string;
}
export interface TierDraft {
  name: string;
  weight: number;
  limits: LimitDraft[];
  quotas: QuotaDraft[];
}

type SaveTier = (input: { originalName: string | null; tier: TierDraft }) => Promise<ActionResult>;

const numberOrUndefined = (v: string) => (v.trim() === "" ? undefined : Number(v));
const textOrUndefined = (v: string) => (v.trim() === "" ? undefined : v.trim());

/** The limit as the policy file would have it: absent fields dropped. */
function cleanLimit(l: LimitDraft): Record<string, unknown> {
  return Object.fromEntries(Object.entries(l).filter(([, v]) => v !== undefined && v !== ""));
}

function fieldErrors(result: { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } }): Record<string, string> {
  const errors: Record<string, string> = {};
  if (result.success || !result.error) return errors;
  for (const issue of result.error.issues) {
    const key = String(issue.path[0] ?? "");
    errors[key] ??= plainMessage(issue.message);
  }
  return errors;
}

function Field({ id, label, error, children }: { id: string; label: string; error?: string; children: React.ReactNode }) {
  return (
    <div>
      <label htmlFor={id} className="label">
        {label}
      </label>
      {children}
      {error && (
        <p id={`${id}-error`} className="field-error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/**
 * Switching algorithm drops the fields the new one does not take (the policy file refuses them), so
 * a field the editor no longer shows never holds an error: a window for concurrency, a lease TTL
 * for anything else, a burst outside the buckets, a precision outside the sliding window counter.
 */
function forAlgorithm(l: LimitDraft, algorithm: string): Partial<LimitDraft> {
  const bucket = algorithm === "token_bucket" || algorithm === "leaky_bucket";
  return {
    algorithm,
    ...(algorithm === "concurrency" ? { window: undefined } : { leaseTtl: undefined, window: l.window ?? "1m" }),
    ...(bucket ? {} : { burst: undefined }),
    ...(algorithm === "sliding_window_counter" ? {} : { precision: undefined }),
  };
}

/** The limit's name on every screen (lib/policy/labels.ts): "API key · sliding window counter · 100 per 1 min". */
function nameOf(l: LimitDraft): string {
  return limitLabel({ scope: l.scope, algorithm: l.algorithm, limit: l.limit ?? 0, windowMs: l.window ? parseDurationMs(l.window) : null, mode: l.mode });
}

function cellSummary(l: LimitDraft): string {
  if (l.algorithm === "concurrency") return `${l.limit ?? "?"} in flight`;
  return `${l.limit ?? "?"}/${l.window ?? "?"}${l.burst ? ` burst ${l.burst}` : ""}`;
}

const ALGORITHM_SHORT: Record<string, string> = {
  fixed_window: "fixed",
  sliding_window_log: "sliding log",
  sliding_window_counter: "sliding",
  token_bucket: "token bucket",
  leaky_bucket: "leaky bucket",
  concurrency: "concurrency",
};

export function TierEditor({
  initial,
  operations,
  isNew,
  canEdit,
  save,
}: {
  initial: TierDraft;
  operations: string[];
  isNew: boolean;
  canEdit: boolean;
  save: SaveTier;
}) {
  const router = useRouter();
  const [tier, setTier] = useState<TierDraft>(initial);
  const [selected, setSelected] = useState<number | null>(null);
  /** A limit "+ add" just inserted with the defaults and nobody has edited yet: Escape takes it back. */
  const [fresh, setFresh] = useState<number | null>(null);
  const [result, setResult] = useState<ActionResult | null>(null);
  /** The tier as last sent: a refusal ("tier name already taken") is shown only until the tier is edited. */
  const [sent, setSent] = useState<TierDraft | null>(null);
  const editorFirstField = useRef<HTMLSelectElement>(null);
  /** What had focus when the editor opened (a cell or its "+ add"): focus returns there on Escape or Close. */
  const openedFrom = useRef<HTMLElement | null>(null);
  useEffect(() => {
    // Focus moves into the limit editor when it opens (or shows another limit).
    if (selected !== null) editorFirstField.current?.focus();
  }, [selected]);
  const [pending, startTransition] = useTransition();
  const [saved, setSaved] = useState<TierDraft>(initial);
  useUnsavedChanges(canEdit && JSON.stringify(tier) !== JSON.stringify(saved));
  const rows = useMemo(() => ["*", ...operations], [operations]);

  const limitErrors = tier.limits.map((l) => fieldErrors(limitSchema.safeParse(cleanLimit(l))));
  const quotaErrors = tier.quotas.map((q) => fieldErrors(quotaSchema.safeParse(cleanLimit(q as unknown as LimitDraft))));
  const refusal = result && !result.ok && JSON.stringify(sent) === JSON.stringify(tier) ? result : null;
  const serverIssues = refusal?.issues ?? [];
  const serverError = (path: string) => serverIssues.find((i) => i.path === path || i.path.startsWith(`tier.${path}`))?.message;
  const headErrors = fieldErrors(tierSchema.safeParse({ name: tier.name, weight: tier.weight, limits: [], quotas: [] }));
  const hasClientErrors = Object.keys(headErrors).length > 0 || limitErrors.some((e) => Object.keys(e).length > 0) || quotaErrors.some((e) => Object.keys(e).length > 0);
  // What "Fix the highlighted fields first" names: each field that shows an error.
  const invalidFields = [
    ...Object.keys(headErrors).map((k) => (k === "name" ? "Tier name" : k === "weight" ? "Fair-share weight" : k)),
    ...limitErrors.flatMap((e, i) => (Object.keys(e).length ? [`limit ${tier.limits[i]!.operation} · ${tier.limits[i]!.scope} (${Object.keys(e).join(", ")})`] : [])),
    ...quotaErrors.flatMap((e, i) => (Object.keys(e).length ? [`quota ${i + 1} (${Object.keys(e).join(", ")})`] : [])),
  ];
  const duplicates = new Set<string>();
  const seen = new Set<string>();
  tier.limits.forEach((l) => {
    const k = `${l.operation}|${l.scope}|${l.algorithm}`;
    if (seen.has(k)) duplicates.add(k);
    seen.add(k);
  });

  const updateLimit = (i: number, patch: Partial<LimitDraft>) => {
    if (i === fresh) setFresh(null);
    setTier((t) => ({ ...t, limits: t.limits.map((l, j) => (j === i ? { ...l, ...patch } : l)) }));
  };

  function openEditor(i: number) {
    openedFrom.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    setSelected(i);
  }

  /** Escape or Close: an untouched new limit is taken back (Escape only); focus returns where the editor was opened from. */
  function closeEditor(cancelFresh: boolean) {
    if (cancelFresh && selected !== null && selected === fresh) {
      setTier((t) => ({ ...t, limits: t.limits.filter((_, j) => j !== selected) }));
    }
    setFresh(null);
    setSelected(null);
    const back = openedFrom.current;
    // The cell button may be gone (a removed limit): then the matrix's own "+ add" of that cell.
    requestAnimationFrame(() => (back?.isConnected ? back.focus() : undefined));
  }
  const updateQuota = (i: number, patch: Partial<QuotaDraft>) =>
    setTier((t) => ({ ...t, quotas: t.quotas.map((q, j) => (j === i ? { ...q, ...patch } : q)) }));

  function addLimit(operation: string, scope: string) {
    const limit: LimitDraft = { operation, scope, algorithm: "sliding_window_counter", limit: 100, window: "1m", mode: "reject" };
    openedFrom.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    setTier((t) => ({ ...t, limits: [...t.limits, limit] }));
    setFresh(tier.limits.length);
    setSelected(tier.limits.length);
  }

  function onSave() {
    setResult(null);
    setSent(tier);
    startTransition(async () => {
      const r = await save({ originalName: isNew ? null : initial.name, tier });
      setResult(r);
      if (r.ok) setSaved(tier);
      if (r.ok && isNew) router.push(`/tiers?tier=${encodeURIComponent(tier.name)}`);
    });
  }

  const sel = selected !== null ? tier.limits[selected] : undefined;
  const selErrors = selected !== null ? (limitErrors[selected] ?? {}) : {};

  return (
    <div className="flex flex-col gap-5" data-testid="tier-editor">
      <div className="card flex flex-wrap items-end gap-4">
        <Field id="tier-name" label="Tier name" error={serverError("name") ?? headErrors.name}>
          <input id="tier-name" aria-invalid={headErrors.name ? true : undefined} className="input w-56" value={tier.name} disabled={!canEdit} onChange={(e) => setTier({ ...tier, name: e.target.value })} />
        </Field>
        <Field id="tier-weight" label="Fair-share weight" error={serverError("weight") ?? headErrors.weight}>
          <input
            id="tier-weight"
            type="number"
            min={1}
            max={1000}
            className="input w-28"
            value={Number.isNaN(tier.weight) ? "" : tier.weight}
            disabled={!canEdit}
            onChange={(e) => setTier({ ...tier, weight: Number(e.target.value) })}
          />
        </Field>
        <p className="max-w-md text-xs text-slate-600">Under a weighted global cap, tenants of this tier get capacity in proportion to this weight.</p>
      </div>

      <div>
        <h2 className="mb-2 text-base font-semibold">Limit matrix</h2>
        <div className="overflow-x-auto rounded-lg border border-slate-200 bg-white">
          <table className="table" data-testid="limit-matrix">
            <thead>
              <tr>
                <th scope="col">Operation</th>
                {SCOPES.map((s) => (
                  <th key={s} scope="col">
                    {s}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((op) => (
                <tr key={op}>
                  <th scope="row" className="bg-white text-left font-mono text-xs font-medium normal-case">
                    {op === "*" ? "* (every operation)" : op}
                  </th>
                  {SCOPES.map((scope) => (
                    <td key={scope} className="min-w-36">
                      <div className="flex flex-col items-start gap-1">
                        {tier.limits.map((l, i) =>
                          l.operation === op && l.scope === scope ? (
                            <button
                              key={i}
                              type="button"
                              onClick={() => openEditor(i)}
                              aria-label={`Edit ${op} ${scope} ${l.algorithm}`}
                              title={nameOf(l)}
                              className={`rounded border px-1.5 py-0.5 text-left text-xs ${selected === i ? "border-indigo-500 bg-indigo-50" : "border-slate-200 bg-slate-50 hover:border-slate-400"} ${Object.keys(limitErrors[i] ?? {}).length ? "border-red-400" : ""}`}
                            >
                              <span className="font-medium">{ALGORITHM_SHORT[l.algorithm] ?? l.algorithm}</span> {cellSummary(l)}
                              {l.mode && l.mode !== "reject" ? <span className="ml-1 text-amber-700">{l.mode}</span> : null}
                            </button>
                          ) : null,
                        )}
                        {canEdit && (
                          <button type="button" className="text-xs text-indigo-700 hover:underline" onClick={() => addLimit(op, scope)} aria-label={`Add a limit for ${op} per ${scope}`}>
                            + add
                          </button>
                        )}
                      </div>
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </div>

      {sel && selected !== null && (
        <div
          className="card border-indigo-200"
          data-testid="cell-editor"
          role="group"
          aria-label={`Limit ${sel.operation} · ${sel.scope}`}
          onKeyDown={(e) => {
            if (e.key === "Escape") {
              e.preventDefault();
              closeEditor(true);
            }
          }}
        >
          <div className="mb-3 flex items-center justify-between">
            <h3 className="font-semibold">
              <span className="font-mono">{sel.operation}</span> · {sel.scope}
              <span className="block text-xs font-normal text-slate-600" data-testid="limit-name">
                {nameOf(sel)}
              </span>
            </h3>
            <div className="flex gap-2">
              {canEdit && (
                <button
                  type="button"
                  className="btn"
                  onClick={() => {
                    setTier((t) => ({ ...t, limits: t.limits.filter((_, j) => j !== selected) }));
                    setFresh(null);
                    setSelected(null);
                  }}
                >
                  Remove limit
                </button>
              )}
              <button type="button" className="btn" onClick={() => closeEditor(false)}>
                Close
              </button>
            </div>
          </div>
          {fresh === selected && (
            <p role="status" className="mb-2 text-sm text-amber-800" data-testid="fresh-limit">
              New limit added to the draft with the defaults (100 per minute, sliding window counter). Change it here, or press Escape to take it back.
            </p>
          )}
          <p className="mb-3 rounded bg-indigo-50 px-3 py-2 text-sm text-indigo-900" data-testid="limit-sentence">
            {describeLimit(sel)}
          </p>
          {duplicates.has(`${sel.operation}|${sel.scope}|${sel.algorithm}`) && (
            <p className="field-error mb-2">Another limit in this cell already uses {sel.algorithm}; choose another algorithm.</p>
          )}
          <fieldset disabled={!canEdit} className="grid grid-cols-2 gap-3 md:grid-cols-4">
            <Field id="cell-algorithm" label="Algorithm" error={selErrors.algorithm}>
              <select ref={editorFirstField} id="cell-algorithm" className="input" value={sel.algorithm} onChange={(e) => updateLimit(selected, forAlgorithm(sel, e.target.value))}>
                {ALGORITHMS.map((a) => (
                  <option key={a} value={a}>
                    {a}
                  </option>
                ))}
              </select>
            </Field>
            <Field id="cell-limit" label="Limit" error={selErrors.limit ?? serverError(`limits.${selected}.limit`)}>
              <input
                id="cell-limit"
                type="number"
                min={1}
                className="input"
                aria-invalid={selErrors.limit ? true : undefined}
                value={sel.limit ?? ""}
                onChange={(e) => updateLimit(selected, { limit: numberOrUndefined(e.target.value) })}
              />
            </Field>
            {sel.algorithm !== "concurrency" && (
            <Field id="cell-window" label="Window (e.g. 1m)" error={selErrors.window ?? serverError(`limits.${selected}.window`)}>
              <input id="cell-window" className="input" aria-invalid={selErrors.window ? true : undefined} value={sel.window ?? ""} placeholder={sel.algorithm === "concurrency" ? "not used" : "1m"} onChange={(e) => updateLimit(selected, { window: textOrUndefined(e.target.value) })} />
            </Field>
            )}
            {(sel.algorithm === "token_bucket" || sel.algorithm === "leaky_bucket") && (
            <Field id="cell-burst" label="Burst" error={selErrors.burst}>
              <input id="cell-burst" type="number" min={1} className="input" aria-invalid={selErrors.burst ? true : undefined} value={sel.burst ?? ""} placeholder="= limit" onChange={(e) => updateLimit(selected, { burst: numberOrUndefined(e.target.value) })} />
            </Field>
            )}
            <Field id="cell-mode" label="Mode" error={selErrors.mode}>
              <select id="cell-mode" className="input" value={sel.mode ?? "reject"} onChange={(e) => updateLimit(selected, e.target.value === "delay" ? { mode: e.target.value } : { mode: e.target.value, maxDelay: undefined })}>
                {MODES.map((m) => (
                  <option key={m}>{m}</option>
                ))}
              </select>
            </Field>
            {sel.mode === "delay" && (
            <Field id="cell-max-delay" label="Max delay (delay mode)" error={selErrors.maxDelay}>
              <input id="cell-max-delay" className="input" aria-invalid={selErrors.maxDelay ? true : undefined} value={sel.maxDelay ?? ""} placeholder="500ms" onChange={(e) => updateLimit(selected, { maxDelay: textOrUndefined(e.target.value) })} />
            </Field>
            )}
            {sel.algorithm === "concurrency" && (
            <Field id="cell-lease-ttl" label="Lease TTL (concurrency)" error={selErrors.leaseTtl}>
              <input id="cell-lease-ttl" className="input" aria-invalid={selErrors.leaseTtl ? true : undefined} value={sel.leaseTtl ?? ""} placeholder="30s" onChange={(e) => updateLimit(selected, { leaseTtl: textOrUndefined(e.target.value) })} />
            </Field>
            )}
            {sel.algorithm === "sliding_window_counter" && (
            <Field id="cell-precision" label="Precision (sliding counter)" error={selErrors.precision}>
              <input id="cell-precision" type="number" min={1} max={60} className="input" aria-invalid={selErrors.precision ? true : undefined} value={sel.precision ?? ""} placeholder="1" onChange={(e) => updateLimit(selected, { precision: numberOrUndefined(e.target.value) })} />
            </Field>
            )}
          </fieldset>
        </div>
      )}

      <div>
        <div className="mb-2 flex items-end justify-between">
          <h2 className="text-base font-semibold">Quotas</h2>
          {canEdit && (
            <button type="button" className="btn" onClick={() => setTier((t) => ({ ...t, quotas: [...t.quotas, { operation: "*", period: "month", limit: 10000, overage: "block" }] }))}>
              + Add quota
            </button>
          )}
        </div>
        {tier.quotas.length === 0 ? (
          <p className="rounded-lg border border-dashed border-slate-300 bg-white px-4 py-3 text-sm text-slate-600">No quota: tenants of this tier have no monthly or daily budget. Add one to cap or bill usage per period.</p>
        ) : (
          <div className="flex flex-col gap-2">
            {tier.quotas.map((q, i) => (
              <fieldset key={i} disabled={!canEdit} className="card grid grid-cols-2 items-end gap-3 md:grid-cols-5" data-testid="quota-row">
                <Field id={`q${i}-operation`} label="Operation" error={quotaErrors[i]?.operation}>
                  <select id={`q${i}-operation`} className="input" value={q.operation} onChange={(e) => updateQuota(i, { operation: e.target.value })}>
                    {rows.map((o) => (
                      <option key={o}>{o}</option>
                    ))}
                  </select>
                </Field>
                <Field id={`q${i}-period`} label="Period" error={quotaErrors[i]?.period}>
                  <select id={`q${i}-period`} className="input" value={q.period} onChange={(e) => updateQuota(i, { period: e.target.value })}>
                    {PERIODS.map((p) => (
                      <option key={p}>{p}</option>
                    ))}
                  </select>
                </Field>
                <Field id={`q${i}-limit`} label="Limit" error={quotaErrors[i]?.limit}>
                  <input id={`q${i}-limit`} type="number" min={1} className="input" value={q.limit ?? ""} onChange={(e) => updateQuota(i, { limit: numberOrUndefined(e.target.value) })} />
                </Field>
                <Field id={`q${i}-overage`} label="Overage" error={quotaErrors[i]?.overage}>
                  <select id={`q${i}-overage`} className="input" value={q.overage} onChange={(e) => updateQuota(i, { overage: e.target.value })}>
                    {OVERAGES.map((o) => (
                      <option key={o}>{o}</option>
                    ))}
                  </select>
                </Field>
                <button type="button" className="btn" onClick={() => setTier((t) => ({ ...t, quotas: t.quotas.filter((_, j) => j !== i) }))}>
                  Remove
                </button>
                <p className="col-span-full text-sm text-slate-600">{describeQuota(q)}</p>
              </fieldset>
            ))}
          </div>
        )}
      </div>

      {canEdit && (
        <div className="flex items-center gap-3">
          <button type="button" className="btn-primary" disabled={pending || hasClientErrors || duplicates.size > 0} onClick={onSave}>
            {pending ? "Saving…" : isNew ? "Create tier" : "Save tier to draft"}
          </button>
          {hasClientErrors && (
            <span className="text-sm text-red-600" data-testid="fix-fields">
              Fix the highlighted fields first: {invalidFields.join(", ")}.
            </span>
          )}
          {result?.ok && (
            <span role="status" className="text-sm text-green-700">
              {result.message ?? "Saved to the draft."} Publish it from the Policy page.
            </span>
          )}
          {refusal && (
            <div role="alert" className="text-sm text-red-600">
              {refusal.message}
              {serverIssues.length > 0 && (
                <ul className="list-disc pl-5">
                  {serverIssues.map((i, k) => (
                    <li key={k}>
                      <span className="font-mono">{i.path}</span>: {i.message}
                    </li>
                  ))}
                </ul>
              )}
            </div>
          )}
        </div>
      )}
    </div>
  );
}
