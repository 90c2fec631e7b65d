"use client";
/**
 * The limit matrix's cell editor (./tier-editor.tsx): one limit's algorithm, numbers and mode, with
 * the sentence it reads as and the errors of each field.
 */
import type { RefObject } from "react";
import { limitLabel } from "@/lib/policy/labels";
import { parseDurationMs } from "@/lib/policy/duration";
import { ALGORITHMS, MODES } from "@/lib/policy/types";
import { describeLimit, type LimitDraft } from "./limit-sentence";
import { Field, numberOrUndefined, textOrUndefined } from "./tier-editor-fields";

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
export function nameOf(l: LimitDraft): string {
  return limitLabel({ scope: l.scope, algorithm: l.algorithm, limit: l.limit ?? 0, windowMs: l.window ? parseDurationMs(l.window) : null, mode: l.mode });
}

export function LimitCellEditor({
  sel,
  selected,
  fresh,
  canEdit,
  selErrors,
  serverError,
  duplicate,
  editorFirstField,
  updateLimit,
  onRemove,
  closeEditor,
}: {
  /** The limit being edited, and its index in the tier's limits. */
  sel: LimitDraft;
  selected: number;
  /** The index of a limit "+ add" just inserted and nobody has edited yet (null: none). */
  fresh: number | null;
  canEdit: boolean;
  selErrors: Record<string, string>;
  serverError: (path: string) => string | undefined;
  /** Another limit of the same cell uses the same algorithm. */
  duplicate: boolean;
  editorFirstField: RefObject<HTMLSelectElement | null>;
  updateLimit: (i: number, patch: Partial<LimitDraft>) => void;
  onRemove: () => void;
  closeEditor: (cancelFresh: boolean) => void;
}) {
  return (
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
            <button type="button" className="btn" onClick={onRemove}>
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
      {duplicate && (
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
  );
}
