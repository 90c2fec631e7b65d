"use client";
import { plainMessage } from "@/lib/policy/plain-messages";
import { useMemo, useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";
import { compileRoutes, resolveOperationName } from "@/lib/policy/match";
import { operationSchema } from "@/lib/policy/policy-file";
import { FAILURE_MODES } from "@/lib/policy/types";

export interface OperationRow {
  name: string;
  match: string[];
  cost: number;
  failureMode: string | null;
}

/** "GET /v1/orders/42 matches orders-read": the same matcher the decision server runs. */
export function MatchTester({ operations }: { operations: OperationRow[] }) {
  const [request, setRequest] = useState("GET /v1/orders/42");
  const doc = useMemo(() => {
    const ops = Object.fromEntries(operations.map((o) => [o.name, { name: o.name, cost: o.cost, failureMode: "open" as const, match: o.match }]));
    return { routes: compileRoutes(operations), operations: ops };
  }, [operations]);
  const trimmed = request.trim();
  const name = trimmed ? resolveOperationName(doc, trimmed) : null;
  return (
    <div className="card">
      <label htmlFor="match-request" className="label">
        Request (METHOD /path, or an operation name)
      </label>
      <input id="match-request" className="input font-mono" value={request} onChange={(e) => setRequest(e.target.value)} />
      <p className="mt-2 text-sm" role="status" data-testid="match-result">
        {!trimmed ? (
          "Type a request."
        ) : name ? (
          <>
            <code className="font-mono">{trimmed}</code> matches <strong>{name}</strong>.
          </>
        ) : (
          <>
            <code className="font-mono">{trimmed}</code> matches no operation: only limits on <code>*</code> apply to it.
          </>
        )}
      </p>
    </div>
  );
}

function OperationForm({
  initial,
  isNew,
  canEdit,
  canSetFailure,
  save,
  remove,
  setFailureMode,
}: {
  initial: OperationRow;
  isNew: boolean;
  canEdit: boolean;
  canSetFailure: boolean;
  save: (input: unknown) => Promise<ActionResult>;
  remove: (input: unknown) => Promise<ActionResult>;
  setFailureMode: (input: unknown) => Promise<ActionResult>;
}) {
  const [name, setName] = useState(initial.name);
  const [patterns, setPatterns] = useState(initial.match.join("\n"));
  const [cost, setCost] = useState(String(initial.cost));
  const [failureMode, setFailure] = useState(initial.failureMode ?? "");
  const [result, setResult] = useState<ActionResult | null>(null);
  const [pending, start] = useTransition();
  const value = {
    name,
    match: patterns.split("\n").map((p) => p.trim()).filter(Boolean),
    cost: Number(cost),
    ...(failureMode ? { failureMode } : {}),
  };
  const check = operationSchema.safeParse(value);
  const errors: Record<string, string> = {};
  if (!check.success) for (const i of check.error.issues) errors[String(i.path[0])] ??= i.path.length > 1 ? `line ${Number(i.path[1]) + 1}: ${plainMessage(i.message)}` : plainMessage(i.message);
  if (result && !result.ok) for (const i of result.issues ?? []) errors[i.path.split(".")[0]] ??= i.message;
  const id = (f: string) => `op-${initial.name || "new"}-${f}`;
  return (
    <form
      className="card grid grid-cols-1 gap-3 md:grid-cols-[12rem_1fr_6rem_9rem]"
      data-testid={`operation-${initial.name || "new"}`}
      onSubmit={(e) => {
        e.preventDefault();
        start(async () => {
          const r = await save({ originalName: isNew ? null : initial.name, operation: value });
          setResult(r);
          if (r.ok && isNew) {
            setName("");
            setPatterns("");
          }
        });
      }}
    >
      <div>
        <label className="label" htmlFor={id("name")}>
          Name
        </label>
        <input id={id("name")} className="input font-mono" disabled={!canEdit} value={name} onChange={(e) => setName(e.target.value)} aria-invalid={errors.name && name ? true : undefined} />
        {errors.name && name && <p className="field-error">{errors.name}</p>}
      </div>
      <div>
        <label className="label" htmlFor={id("match")}>
          Match patterns, one per line (* = one segment, ** = the rest)
        </label>
        <textarea id={id("match")} rows={Math.max(2, value.match.length)} className="input font-mono" disabled={!canEdit} value={patterns} onChange={(e) => setPatterns(e.target.value)} placeholder="GET /v1/orders/*" aria-invalid={errors.match ? true : undefined} />
        {errors.match && <p className="field-error">{errors.match}</p>}
      </div>
      <div>
        <label className="label" htmlFor={id("cost")}>
          Cost
        </label>
        <input id={id("cost")} type="number" min={1} className="input" disabled={!canEdit} value={cost} onChange={(e) => setCost(e.target.value)} aria-invalid={errors.cost ? true : undefined} />
        {errors.cost && <p className="field-error">{errors.cost}</p>}
      </div>
      <div>
        <label className="label" htmlFor={id("failure")}>
          Failure mode
        </label>
        <select id={id("failure")} className="input" disabled={!canEdit && !canSetFailure} value={failureMode} onChange={(e) => setFailure(e.target.value)}>
          <option value="">default</option>
          {FAILURE_MODES.map((m) => (
            <option key={m}>{m}</option>
          ))}
        </select>
      </div>
      <div className="col-span-full flex items-center gap-2">
        {canEdit && (
          <button type="submit" className="btn-primary" disabled={pending || !check.success}>
            {pending ? "Saving…" : isNew ? "Add operation" : "Save"}
          </button>
        )}
        {!canEdit && canSetFailure && !isNew && (
          <button type="button" className="btn-primary" disabled={pending || failureMode === (initial.failureMode ?? "")} onClick={() => start(async () => setResult(await setFailureMode({ name: initial.name, failureMode: failureMode || null })))}>
            {pending ? "Saving…" : "Save failure mode"}
          </button>
        )}
        {canEdit && !isNew && (
          <button
            type="button"
            className="btn"
            disabled={pending}
            onClick={() => {
              if (window.confirm(`Delete operation ${initial.name} from the draft?`)) start(async () => setResult(await remove(initial.name)));
            }}
          >
            Delete
          </button>
        )}
        {result && (
          <span role={result.ok ? "status" : "alert"} className={`text-sm ${result.ok ? "text-green-700" : "text-red-600"}`}>
            {result.message}
          </span>
        )}
      </div>
    </form>
  );
}

export function OperationsEditor(props: {
  operations: OperationRow[];
  canEdit: boolean;
  canSetFailure: boolean;
  save: (input: unknown) => Promise<ActionResult>;
  remove: (input: unknown) => Promise<ActionResult>;
  setFailureMode: (input: unknown) => Promise<ActionResult>;
}) {
  const { operations, ...rest } = props;
  return (
    <div className="flex flex-col gap-3">
      {operations.map((o) => (
        <OperationForm key={o.name} initial={o} isNew={false} {...rest} />
      ))}
      {props.canEdit && (
        <>
          <h3 className="mt-2 text-sm font-semibold">New operation</h3>
          <OperationForm initial={{ name: "", match: [], cost: 1, failureMode: null }} isNew {...rest} />
        </>
      )}
    </div>
  );
}
