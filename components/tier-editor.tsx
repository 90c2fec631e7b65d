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
import { SCOPES } from "@/lib/policy/types";
import type { ActionResult } from "@/lib/errors";
import { LimitCellEditor, nameOf } from "./limit-cell-editor";
import type { LimitDraft } from "./limit-sentence";
import { QuotaRows, type QuotaDraft } from "./quota-rows";
import { Field, fieldErrors } from "./tier-editor-fields";

export interface TierDraft {
  name: string;
  weight: number;
  limits: LimitDraft[];
  quotas: QuotaDraft[];
}

type SaveTier = (input: { originalName: string | null; tier: TierDraft }) => Promise<ActionResult>;

/** The limit as the policy file would have it: absent fields dropped. */
function cleanLimit(l: LimitDraft): Record<string, unknown> {
  return Object.fromEntries(Object.entries(l).filter(([, v]) => v !== undefined && v !== ""));
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
        <LimitCellEditor
          sel={sel}
          selected={selected}
          fresh={fresh}
          canEdit={canEdit}
          selErrors={selErrors}
          serverError={serverError}
          duplicate={duplicates.has(`${sel.operation}|${sel.scope}|${sel.algorithm}`)}
          editorFirstField={editorFirstField}
          updateLimit={updateLimit}
          onRemove={() => {
            setTier((t) => ({ ...t, limits: t.limits.filter((_, j) => j !== selected) }));
            setFresh(null);
            setSelected(null);
          }}
          closeEditor={closeEditor}
        />
      )}

      <QuotaRows quotas={tier.quotas} quotaErrors={quotaErrors} rows={rows} canEdit={canEdit} updateQuota={updateQuota} setQuotas={(change) => setTier((t) => ({ ...t, quotas: change(t.quotas) }))} />

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
