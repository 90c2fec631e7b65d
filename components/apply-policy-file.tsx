"use client";
import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";

interface PlanLine {
  kind: "added" | "changed" | "removed";
  entity: string;
  key: string;
  text: string;
}
interface Preview {
  lines: PlanLine[];
  warnings: string[];
  refused: { field: string; message: string }[];
}

const KIND_STYLE = { added: "bg-green-100 text-green-800", changed: "bg-amber-100 text-amber-800", removed: "bg-red-100 text-red-800" } as const;

/**
 * Paste or upload a policy file, see its dry run (every change, or every error by field), then apply
 * it to the draft. Apply is offered only for the text the dry run was made of.
 */
export function ApplyPolicyFile({
  preview,
  apply,
}: {
  preview: (input: unknown) => Promise<ActionResult<Preview>>;
  apply: (input: unknown) => Promise<ActionResult<{ generatedKeys: { tenant: string; name: string; key: string }[] }>>;
}) {
  const router = useRouter();
  const [text, setText] = useState("");
  const [checked, setChecked] = useState<{ text: string; result: ActionResult<Preview> } | null>(null);
  const [applied, setApplied] = useState<ActionResult<{ generatedKeys: { tenant: string; name: string; key: string }[] }> | null>(null);
  const [pending, start] = useTransition();
  const current = checked && checked.text === text ? checked.result : null;
  const plan = current?.ok ? current.data : undefined;
  const canApply = Boolean(plan && plan.lines.length > 0 && plan.refused.length === 0);
  return (
    <div className="card flex flex-col gap-3" data-testid="apply-policy-file">
      <div className="flex flex-wrap items-end gap-3">
        <div>
          <label htmlFor="policy-file-upload" className="label">
            Policy file (YAML or JSON)
          </label>
          <input
            id="policy-file-upload"
            type="file"
            accept=".yaml,.yml,.json,text/yaml,application/json"
            className="text-sm"
            onChange={(e) => {
              const file = e.target.files?.[0];
              if (file) void file.text().then(setText);
            }}
          />
        </div>
      </div>
      <div>
        <label htmlFor="policy-file-text" className="label">
          Or paste it
        </label>
        <textarea
          id="policy-file-text"
          className="input h-40 w-full font-mono text-xs"
          value={text}
          spellCheck={false}
          onChange={(e) => {
            setText(e.target.value);
            setApplied(null);
          }}
          placeholder={"operations:\n  - name: orders-read\n    match: [\"GET /v1/orders*\"]\ntiers: …"}
        />
      </div>
      <div className="flex flex-wrap gap-2">
        <button
          type="button"
          className="btn"
          disabled={pending}
          onClick={() =>
            start(async () => {
              setApplied(null);
              setChecked({ text, result: await preview({ text }) });
            })
          }
        >
          {pending ? "Checking…" : "Dry run: show the changes"}
        </button>
        <button
          type="button"
          className="btn-primary"
          disabled={pending || !canApply}
          title={canApply ? undefined : "Run the dry run of this text first; a file with errors or refused changes cannot be applied."}
          onClick={() =>
            start(async () => {
              const r = await apply({ text });
              setApplied(r);
              if (r.ok) {
                setChecked(null);
                router.refresh();
              }
            })
          }
        >
          Apply to the draft
        </button>
      </div>
      {current && !current.ok && (
        <div role="alert" className="text-sm text-red-700" data-testid="policy-file-errors">
          <p className="font-medium">Not applicable: {current.message}</p>
          {current.issues && current.issues.length > 1 && (
            <ul className="mt-1 list-disc pl-5">
              {current.issues.map((i, k) => (
                <li key={k}>
                  <span className="font-mono">{i.path}</span>: {i.message}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {plan && (
        <div data-testid="policy-file-plan" className="flex flex-col gap-2">
          <p className="text-sm" role="status">
            {current?.message}
          </p>
          {plan.refused.length > 0 && (
            <div role="alert" className="text-sm text-red-700" data-testid="policy-file-refused">
              <p className="font-medium">Your role may not make these changes, so the file cannot be applied:</p>
              <ul className="list-disc pl-5">
                {plan.refused.map((r, k) => (
                  <li key={k}>
                    <span className="font-mono">{r.field}</span>: {r.message}
                  </li>
                ))}
              </ul>
            </div>
          )}
          {plan.lines.length > 0 && (
            <ul className="flex max-h-80 flex-col gap-1.5 overflow-auto text-sm">
              {plan.lines.map((l, k) => (
                <li key={k} className="flex items-start gap-2">
                  <span className={`badge ${KIND_STYLE[l.kind]} w-20 shrink-0 justify-center`}>{l.kind}</span>
                  <span className="min-w-0 flex-1 break-words">
                    <span className="text-slate-500">{l.entity}</span> <span className="font-mono text-xs">{l.key}</span>
                    {l.text && `: ${l.text}`}
                  </span>
                </li>
              ))}
            </ul>
          )}
          {plan.warnings.map((w, k) => (
            <p key={k} className="text-sm text-amber-800">
              {w}
            </p>
          ))}
        </div>
      )}
      {applied && (
        <div role={applied.ok ? "status" : "alert"} className={`text-sm ${applied.ok ? "text-green-700" : "text-red-700"}`} data-testid="policy-file-applied">
          <p>{applied.message}</p>
          {applied.ok && applied.data && applied.data.generatedKeys.length > 0 && (
            <div className="mt-2">
              <p className="text-slate-800">New keys, shown once (copy them now):</p>
              <ul className="font-mono text-xs break-all">
                {applied.data.generatedKeys.map((k) => (
                  <li key={`${k.tenant}/${k.name}`}>
                    {k.tenant}/{k.name}: {k.key}
                  </li>
                ))}
              </ul>
            </div>
          )}
        </div>
      )}
    </div>
  );
}
