"use client";
import { issueInWords } from "@/lib/policy/plain-messages";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";

type Act = (input: unknown) => Promise<ActionResult>;

/** What a tenant page action answered: its message, and on a refusal the issues in words (unless the message already lists them). */
export function Result({ result }: { result: ActionResult | null }) {
  if (!result) return null;
  return (
    <p role={result.ok ? "status" : "alert"} className={`text-sm ${result.ok ? "text-green-700" : "text-red-600"}`}>
      {result.message}
      {!result.ok && result.issues?.length && !result.message.startsWith("Not saved.") ? ` (${result.issues.map((i) => issueInWords(i)).join("; ")})` : null}
    </p>
  );
}

export function TenantTierStatus({
  slug,
  tier,
  status,
  tiers,
  canEdit,
  setTier,
  setStatus,
}: {
  slug: string;
  tier: string;
  status: string;
  tiers: string[];
  canEdit: boolean;
  setTier: Act;
  setStatus: Act;
}) {
  const [selected, setSelected] = useState(tier);
  const [result, setResult] = useState<ActionResult | null>(null);
  const [pending, start] = useTransition();
  return (
    <div className="card flex flex-col gap-3">
      <div className="flex flex-wrap items-end gap-3">
        <div>
          <label htmlFor="tenant-tier" className="label">
            Tier
          </label>
          <select id="tenant-tier" className="input w-48" value={selected} disabled={!canEdit || pending} onChange={(e) => setSelected(e.target.value)}>
            {tiers.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </div>
        {canEdit && (
          <button type="button" className="btn-primary" disabled={pending || selected === tier} onClick={() => start(async () => setResult(await setTier({ slug, tier: selected })))}>
            {pending ? "Saving…" : "Move to tier"}
          </button>
        )}
        <div className="ml-auto flex items-center gap-2">
          <span className={`badge ${status === "suspended" ? "bg-red-100 text-red-800" : "bg-green-100 text-green-800"}`} data-testid="tenant-status">
            {status}
          </span>
          {canEdit &&
            (status === "active" ? (
              <button
                type="button"
                className="btn-danger"
                disabled={pending}
                onClick={() => {
                  if (!window.confirm(`Suspend ${slug}? After publishing, every request of its keys gets 403.`)) return;
                  start(async () => setResult(await setStatus({ slug, status: "suspended" })));
                }}
              >
                Suspend
              </button>
            ) : (
              <button type="button" className="btn" disabled={pending} onClick={() => start(async () => setResult(await setStatus({ slug, status: "active" })))}>
                Reactivate
              </button>
            ))}
        </div>
      </div>
      <Result result={result} />
    </div>
  );
}
