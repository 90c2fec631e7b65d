"use client";
import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";
import { ShownOnce } from "./keys-panel";

type Act<T = unknown> = (input: unknown) => Promise<ActionResult<T>>;

/** Overlaps offered: how long the old key keeps working beside the new one. */
const OVERLAPS = [
  { minutes: 60, label: "1 hour" },
  { minutes: 24 * 60, label: "24 hours" },
  { minutes: 7 * 24 * 60, label: "7 days" },
  { minutes: 30 * 24 * 60, label: "30 days" },
  { minutes: 0, label: "none: revoke the old key now" },
] as const;

/** Rotate (a new key, the old one working for the overlap) and revoke, on a key's page. */
export function KeyActions({
  slug,
  keyId,
  name,
  prefix,
  rotate,
  revoke,
}: {
  slug: string;
  keyId: string;
  name: string;
  prefix: string;
  rotate: Act<{ key: string; name: string; id: string; oldExpiresAt: string }>;
  revoke: Act;
}) {
  const router = useRouter();
  const [overlap, setOverlap] = useState<number>(24 * 60);
  const [created, setCreated] = useState<{ key: string; name: string; id: string } | null>(null);
  const [result, setResult] = useState<ActionResult<unknown> | null>(null);
  const [pending, start] = useTransition();
  return (
    <div className="card flex flex-col gap-3" data-testid="key-actions">
      {created && (
        <>
          <ShownOnce label={`API key ${created.name} created to replace ${name}.`} secret={created.key} onDismiss={() => setCreated(null)} />
          <a className="text-sm text-indigo-700 hover:underline" href={`/tenants/${slug}/keys/${created.id}`}>
            Open {created.name}
          </a>
        </>
      )}
      <form
        className="flex flex-wrap items-end gap-3"
        onSubmit={(e) => {
          e.preventDefault();
          const what = overlap === 0 ? `revoked now` : `kept working for ${OVERLAPS.find((o) => o.minutes === overlap)?.label}, then revoked`;
          if (!window.confirm(`Rotate ${name} (${prefix}…)? A new key is issued; the old one is ${what}.`)) return;
          start(async () => {
            const r = await rotate({ slug, keyId, overlapMinutes: overlap });
            setResult(r);
            if (r.ok && r.data) {
              setCreated({ key: r.data.key, name: r.data.name, id: r.data.id });
              router.refresh();
            }
          });
        }}
      >
        <div>
          <label htmlFor="rotate-overlap" className="label">
            Overlap (both keys work)
          </label>
          <select id="rotate-overlap" className="input w-64" value={overlap} onChange={(e) => setOverlap(Number(e.target.value))} disabled={pending}>
            {OVERLAPS.map((o) => (
              <option key={o.minutes} value={o.minutes}>
                {o.label}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" className="btn-primary" disabled={pending}>
          {pending ? "Rotating…" : "Rotate key"}
        </button>
        <button
          type="button"
          className="btn-danger"
          disabled={pending}
          onClick={() => {
            if (!window.confirm(`Revoke key ${name} (${prefix}…)? Its clients are refused immediately.`)) return;
            start(async () => {
              setResult(await revoke({ slug, name }));
              router.refresh();
            });
          }}
        >
          Revoke now
        </button>
      </form>
      {result && (
        <p role={result.ok ? "status" : "alert"} className={`text-sm ${result.ok ? "text-green-700" : "text-red-600"}`} data-testid="key-action-result">
          {result.message}
        </p>
      )}
    </div>
  );
}
