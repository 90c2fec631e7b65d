"use client";
import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";

/** Re-renders the server page every `seconds` (the data is fetched on the server); can be paused. */
export function AutoRefresh({ seconds = 30 }: { seconds?: number }) {
  const router = useRouter();
  const [on, setOn] = useState(true);
  useEffect(() => {
    if (!on) return;
    const id = setInterval(() => router.refresh(), seconds * 1000);
    return () => clearInterval(id);
  }, [on, seconds, router]);
  return (
    <label className="flex items-center gap-1.5 text-xs text-slate-600">
      <input type="checkbox" checked={on} onChange={(e) => setOn(e.target.checked)} data-testid="auto-refresh" />
      Auto refresh ({seconds}s)
    </label>
  );
}
