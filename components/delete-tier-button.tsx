"use client";
import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";
import { deleteTierAction } from "@/app/tiers/actions";

export function DeleteTierButton({ name, tenants }: { name: string; tenants: number }) {
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
            const r = await deleteTierAction(name);
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
