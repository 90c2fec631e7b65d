"use client";
import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/errors";

/** `onDelete`: the page's server action (app/tiers/actions.ts deleteTierAction). */
export function DeleteTierButton({ name, tenants, onDelete }: { name: string; tenants: number; onDelete: (name: string) => Promise<ActionResult> }) {
  const router = useRouter();
  const [message, setMessage] = useState<string | null>(null);
  const [pending, start] = useTransition();
  return (
    <div className="flex items-center gap-3">
      <button
        type="button"
        className="btn"
        disabled={pending}
        onClick={() => {
          if (!window.confirm(`Delete tier ${name} from the draft?`)) return;
          start(async () => {
            const r = await onDelete(name);
            if (r.ok) router.push("/tiers");
            else setMessage(r.message);
          });
        }}
      >
        {pending ? "Deleting…" : `Delete tier ${name}`}
      </button>
      {tenants > 0 && <span className="text-xs text-slate-500">{tenants} tenant(s) use it: move them first.</span>}
      {message && (
        <span role="alert" className="text-sm text-red-600">
          {message}
        </span>
      )}
    </div>
  );
}
